import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { letTimePass } from '../../../test/wait';
import type { Db } from '../../platform/db';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import { type OutboxFact, writeOutbox, writeOutboxMany } from '../outbox';
import { fanOutBatch } from './fanout.job';
import { FANOUT_BATCH } from './policy';
import { createWebhook, updateWebhook } from './webhooks.service';

/** The fan-out's consent default: granted (these tests' subscriptions name no category). */
const GRANTED = { consentDefault: async () => true };

/**
 * Where a workspace's fan-out starts (docs/webhooks.md): its first subscription starts at the
 * outbox's end, so it never reads the history before it, however long; a later subscription leaves
 * the cursor where the earlier ones need it.
 */
let t: TestDb;
let db: Db;
beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
});
afterAll(() => t.close());

async function workspaceWithHistory(facts: number): Promise<string> {
  const ws = randomUUID();
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'fan-out start']);
  const rows: OutboxFact[] = Array.from({ length: facts }, (_, i) => ({
    workspaceId: ws,
    type: 'order.completed',
    data: { order_id: `o${i}`, profile_id: randomUUID() },
  }));
  await writeOutboxMany(db, rows);
  return ws;
}

const subscribe = (ws: string) =>
  createWebhook(db, ws, { url: 'http://127.0.0.1:9/hook', events: ['order.completed'] }, true);

describe('where the fan-out of a workspace starts', () => {
  it('starts a first subscription at the outbox’s end: the next fan-out reads none of the history, a later fact is delivered', async () => {
    const ws = await workspaceWithHistory(3 * FANOUT_BATCH);
    await subscribe(ws);
    expect(await fanOutBatch(db, ws, GRANTED)).toEqual({ facts: 0, deliveries: 0 });
    await writeOutbox(db, ws, 'order.completed', { order_id: 'after', profile_id: randomUUID() });
    expect(await fanOutBatch(db, ws, GRANTED)).toEqual({ facts: 1, deliveries: 1 });
  });

  it('starts at the end again when every earlier subscription was deleted or disabled', async () => {
    const ws = await workspaceWithHistory(10);
    const first = await subscribe(ws);
    await updateWebhook(db, ws, first.id, { enabled: false }, true);
    await writeOutboxMany(db, [{ workspaceId: ws, type: 'order.completed', data: { order_id: 'x' } }]);
    await subscribe(ws);
    expect(await fanOutBatch(db, ws, GRANTED)).toEqual({ facts: 0, deliveries: 0 });
  });

  it('leaves the cursor where it is for a later subscription: facts owed to the first are still read', async () => {
    const ws = await workspaceWithHistory(0);
    await subscribe(ws);
    await writeOutbox(db, ws, 'order.completed', { order_id: 'owed', profile_id: randomUUID() });
    await letTimePass(
      5,
      'the second subscription is created after the fact (creation times compare to the ms)',
    );
    await subscribe(ws);
    // Read and delivered to the first subscription only (the second was created after the fact).
    expect(await fanOutBatch(db, ws, GRANTED)).toEqual({ facts: 1, deliveries: 1 });
  });
});
