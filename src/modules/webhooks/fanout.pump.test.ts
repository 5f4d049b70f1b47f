import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import type { Db } from '../../platform/db';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import { createLogger } from '../../platform/logger';
import { writeOutbox } from '../outbox';
import { startFanOutPump } from './fanout.pump';
import { insertSubscription } from './webhooks.repo';

/** The fan-out's consent default: granted (these tests' subscriptions name no category). */
const GRANTED = { consentDefault: async () => true };

let t: TestDb;
let db: Db;
beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
});
afterAll(() => t.close());

async function workspaceWithSubscription(): Promise<string> {
  const ws = randomUUID();
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'pump test']);
  await insertSubscription(db, {
    id: `whk_${randomUUID()}`,
    workspaceId: ws,
    url: 'https://example.com/hook',
    events: ['order.completed'],
    secret: 'whsec_test-secret-0123456789',
    segments: [],
    consentCategories: [],
  });
  return ws;
}

const deliveriesOf = async (ws: string) =>
  (
    await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1',
      [ws],
    )
  ).rows[0]!.n;

describe('the fan-out pump', () => {
  it('fans a workspace out when a transaction that wrote facts to it commits', async () => {
    const ws = await workspaceWithSubscription();
    let woken = 0;
    const stop = await startFanOutPump({
      ...GRANTED,
      db,
      log: createLogger('silent'),
      onDeliveries: () => woken++,
    });
    try {
      await db.transaction((tx) => writeOutbox(tx, ws, 'order.completed', { order_id: 'o1' }));
      await waitUntil(async () => (await deliveriesOf(ws)) === 1, { what: 'one delivery row' });
      await waitUntil(() => woken > 0, { what: 'the pump to wake the deliverer' });
    } finally {
      await stop();
    }
  });

  it('reads on the worker lane, so its fan-outs never pass for requests being served', async () => {
    // PGlite's processing loop shrinks its batches while the foreground lane was used in the last
    // second; the pump runs after nearly every batch the pipeline commits.
    const ws = await workspaceWithSubscription();
    const worker = db.lane('worker');
    const seenBefore = db.foregroundSeenAt();
    const stop = await startFanOutPump({
      ...GRANTED,
      db,
      log: createLogger('silent'),
      onDeliveries: () => {},
    });
    try {
      await worker.transaction((tx) => writeOutbox(tx, ws, 'order.completed', { order_id: 'o3' }));
      await waitUntil(
        async () =>
          (
            await worker.query<{ n: number }>(
              'SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1',
              [ws],
            )
          ).rows[0]!.n === 1,
        { what: 'one delivery row' },
      );
      expect(db.foregroundSeenAt()).toBe(seenBefore);
    } finally {
      await stop();
    }
  });

  it('retries a fan-out that failed on a storage outage, and delivers once storage is back', async () => {
    const ws = await workspaceWithSubscription();
    let failures = 2;
    // The database the pump sees (on every lane): its transactions fail twice (storage down), then work.
    const flaky: Db = Object.create(db, {
      transaction: {
        value: <T>(fn: Parameters<Db['transaction']>[0]) =>
          failures-- > 0
            ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
            : (db.transaction(fn) as Promise<T>),
      },
      lane: { value: () => flaky },
    });
    const stop = await startFanOutPump({
      ...GRANTED,
      db: flaky,
      log: createLogger('silent'),
      onDeliveries: () => {},
    });
    try {
      await db.transaction((tx) => writeOutbox(tx, ws, 'order.completed', { order_id: 'o2' }));
      await waitUntil(async () => (await deliveriesOf(ws)) === 1, {
        what: 'one delivery row once storage is back',
        timeoutMs: 15_000,
      });
      expect(failures).toBeLessThan(0);
    } finally {
      await stop();
    }
  });
});
