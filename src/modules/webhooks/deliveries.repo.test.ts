import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import type { Db } from '../../platform/db';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import {
  getDelivery,
  insertDeliveries,
  pendingAfter,
  pendingBefore,
  recordAttempt,
  takeAttempt,
} from './deliveries.repo';
import { insertSubscription } from './webhooks.repo';

let t: TestDb;
let db: Db;
let ws: string;
let sub: string;

beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
  ws = randomUUID();
  sub = `whk_${randomUUID()}`;
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'deliveries test']);
  await insertSubscription(db, {
    id: sub,
    workspaceId: ws,
    url: 'https://example.com/hook',
    events: ['order.completed'],
    secret: 'whsec_test-secret-0123456789',
    segments: [],
    consentCategories: [],
  });
});
afterAll(() => t.close());

/** Deliveries of facts about the given profiles, in this order. */
async function deliveries(...profiles: Array<string | null>): Promise<string[]> {
  return insertDeliveries(
    db,
    profiles.map((p) => ({
      id: `dlv_${randomUUID()}`,
      workspace_id: ws,
      subscription_id: sub,
      event_id: `evt_${randomUUID()}`,
      event_type: 'order.completed',
      body: {},
      order_key: p,
    })),
  );
}

const done = {
  statusCode: 200,
  error: null,
  durationMs: 1,
  status: 'delivered' as const,
  nextAttemptInMs: null,
  requestId: 'req_test',
};

describe('webhook deliveries in the database', () => {
  it('let one taker make an attempt: a second taker is refused until the first records it or its lease ends', async () => {
    const [id] = await deliveries(null);
    expect(await takeAttempt(db, id!, 1, 60_000)).toBe(true);
    expect(await takeAttempt(db, id!, 1, 60_000)).toBe(false);
    // The attempt was recorded: attempt 1 is no longer there to take, attempt 2 is not due (delivered).
    await recordAttempt(db, id!, 1, done);
    expect(await takeAttempt(db, id!, 1, 60_000)).toBe(false);
    expect(await takeAttempt(db, id!, 2, 60_000)).toBe(false);
    // A lease that ran out (its taker died) can be taken again.
    const [other] = await deliveries(null);
    expect(await takeAttempt(db, other!, 1, 1)).toBe(true);
    const leaseOver = async () =>
      (
        await db.query<{ over: boolean }>(
          'SELECT attempt_until < now() AS over FROM webhook_deliveries WHERE id = $1',
          [other],
        )
      ).rows[0]!.over;
    await waitUntil(leaseOver, { what: 'the 1 ms lease to run out by the database clock' });
    expect(await takeAttempt(db, other!, 1, 60_000)).toBe(true);
  });

  it("hold a profile's later deliveries behind its pending earlier ones, and only that profile's", async () => {
    const [a, x, b, c] = await deliveries('p1', 'p2', 'p1', 'p1');
    const row = async (id: string) => (await getDelivery(db, id!))!;
    expect(await pendingBefore(db, await row(a!))).toBeNull();
    expect(await pendingBefore(db, await row(x!))).toBeNull();
    expect(await pendingBefore(db, await row(b!))).toBe(a);
    expect(await pendingBefore(db, await row(c!))).toBe(a);
    expect((await pendingAfter(db, await row(a!)))?.id).toBe(b);
    // Once the first is done with, the second is next and the third waits on it.
    await recordAttempt(db, a!, 1, done);
    expect(await pendingBefore(db, await row(b!))).toBeNull();
    expect(await pendingBefore(db, await row(c!))).toBe(b);
  });
});
