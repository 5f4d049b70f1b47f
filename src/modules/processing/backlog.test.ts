import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { onlyOn } from '../../../test/skips';
import { createLogger } from '../../platform/logger';
import { createMutex } from '../../platform/mutex';
import { claimEvent, countBacklog, findPendingBefore, vacuumBacklog } from './processing.repo';
import { processBatch } from './processing.service';
import { insertTestEvents, type TestEvent, waitProcessed } from './processing.test-kit';
import { startProcessingLoop } from './processing.worker';

/** The backlog (migrations/0006_event_backlog.sql, 0009): what the workers claim from. */
let svc: TestService;
beforeAll(async () => {
  // ROLE=api: no worker of the service's own; each test drives processing itself.
  svc = await startTestService({ ROLE: 'api' });
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;
const ctx = () => ({
  log: createLogger('silent'),
  settings: svc.rt.deps.settings,
  orderGate: createMutex(),
});
/** Holds a waiting event as another worker would (its backlog row locked) until `release()`. */
async function holdEvent(eventId: string): Promise<() => Promise<void>> {
  const { rows } = await db().query<{ seq: string }>('SELECT seq FROM events WHERE id = $1', [eventId]);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  const holder = db().transaction(async (tx) => {
    expect(await claimEvent(tx, Number(rows[0]!.seq))).not.toBeNull();
    holding();
    await released;
  });
  await held;
  return async () => {
    release();
    await holder;
  };
}
const drain = async () => {
  while ((await processBatch(db(), ctx(), 1000)).claimed > 0) {}
};
/** Appends two events, holds the older as another worker would: the batch must defer the newer. */
async function expectNewerDeferred(older: TestEvent, newer: TestEvent): Promise<void> {
  const [heldId] = await insertTestEvents(db(), svc.ws.id, [older, newer]);
  const release = await holdEvent(heldId!);
  try {
    expect(await processBatch(db(), ctx(), 1000)).toMatchObject({ claimed: 1, deferred: 1, applied: 0 });
  } finally {
    await release();
  }
  await drain();
  expect(await countBacklog(db())).toBe(0);
}

describe('the event backlog', () => {
  it('holds every appended event until it is processed, then nothing', async () => {
    await drain();
    await insertTestEvents(db(), svc.ws.id, [
      { anonymous_id: crypto.randomUUID(), event_type: 'page', event_name: 'a' },
      { anonymous_id: crypto.randomUUID(), event_type: 'page', event_name: 'b' },
    ]);
    expect(await countBacklog(db())).toBe(2);
    await drain();
    expect(await countBacklog(db())).toBe(0);
  });

  it('carries the workspace, identifiers and order id of each waiting event, which the order guard reads', async () => {
    await drain();
    const anon = crypto.randomUUID();
    await insertTestEvents(db(), svc.ws.id, [
      { anonymous_id: anon, identity: 'guard@example.com', event_type: 'identify', event_name: 'identify' },
      {
        anonymous_id: anon,
        event_type: 'order',
        event_name: 'Order',
        payload: { order_id: 'G-1', total: 1 },
      },
    ]);
    const pending = await findPendingBefore(db(), Number.MAX_SAFE_INTEGER, [], 10);
    const waiting = { seq: expect.anything(), workspace_id: svc.ws.id, anonymous_id: anon };
    expect(pending).toEqual([
      { ...waiting, identity: 'guard@example.com', order_id: null },
      { ...waiting, identity: null, order_id: 'G-1' },
    ]);
    await drain();
    expect(await findPendingBefore(db(), Number.MAX_SAFE_INTEGER, [], 10)).toEqual([]);
  });

  it('drops the entries of events deleted before they were processed, and claims on', async () => {
    await drain();
    const [gone, kept] = await insertTestEvents(db(), svc.ws.id, [
      { anonymous_id: crypto.randomUUID(), event_type: 'page', event_name: 'gone' },
      { anonymous_id: crypto.randomUUID(), event_type: 'page', event_name: 'kept' },
    ]);
    await db().query('DELETE FROM events WHERE id = $1', [gone]);
    const out = await processBatch(db(), ctx(), 1000);
    expect(out).toMatchObject({ claimed: 2, applied: 1 });
    expect(await countBacklog(db())).toBe(0);
    const { rows } = await db().query<{ processed: boolean }>(
      'SELECT e.seq NOT IN (SELECT seq FROM event_backlog) AS processed FROM events e WHERE e.id = $1',
      [kept],
    );
    expect(rows[0]!.processed).toBe(true);
  });

  it('records where each event was applied without rewriting the log, its time kept to the microsecond', async () => {
    await drain();
    const anon = crypto.randomUUID();
    const [id] = await insertTestEvents(db(), svc.ws.id, [
      { anonymous_id: anon, event_type: 'track', event_name: 'Precise' },
    ]);
    // A bulk load by hand may carry microseconds; the API keeps milliseconds (a JS Date).
    await db().query(`UPDATE events SET occurred_at = '2024-03-01 12:00:00.123456+00' WHERE id = $1`, [id]);
    const before = await db().query<{ ctid: string }>('SELECT ctid::text FROM events WHERE id = $1', [id]);
    await drain();
    const { rows } = await db().query<{ same: boolean; profile_id: string; ctid: string }>(
      `SELECT a.profile_id, e.ctid::text AS ctid,
              (a.workspace_id, a.occurred_at, a.event_type, a.event_name)
                = (e.workspace_id, e.occurred_at, e.event_type, e.event_name) AS same
         FROM events e JOIN event_profiles a ON a.seq = e.seq WHERE e.id = $1`,
      [id],
    );
    const profile = (await svc.call('GET', `/tenant/profiles?identity=${anon}`)).body.data[0];
    expect(rows).toEqual([{ same: true, profile_id: profile.id, ctid: before.rows[0]!.ctid }]);
  });

  it('is vacuumed (and the tables analyzed) by the loop as it goes, without stopping it', async () => {
    await drain();
    const loop = await startProcessingLoop(db(), createLogger('silent'), { batchSize: 2, vacuumEvery: 1 });
    try {
      await insertTestEvents(
        db(),
        svc.ws.id,
        Array.from({ length: 6 }, (_, i) => ({
          anonymous_id: crypto.randomUUID(),
          event_type: 'page' as const,
          event_name: `v${i}`,
        })),
      );
      loop.kick();
      await waitProcessed(db());
    } finally {
      await loop.stop();
    }
  });

  // PGlite has one connection: a second transaction cannot hold an event while a batch runs.
  const heldBySecondConnection = onlyOn('postgres', 'a second connection holds an event');
  heldBySecondConnection.it(
    'puts an event the order guard deferred back on the backlog, to be applied after the older one',
    async () => {
      await drain();
      const [anon, other] = [crypto.randomUUID(), crypto.randomUUID()];
      const ids = await insertTestEvents(db(), svc.ws.id, [
        { anonymous_id: anon, event_type: 'page', event_name: 'older' },
        { anonymous_id: anon, event_type: 'page', event_name: 'newer' },
        { anonymous_id: other, event_type: 'page', event_name: 'someone else' },
      ]);
      // Another worker holds the older event of the same person.
      const release = await holdEvent(ids[0]!);
      const out = await processBatch(db(), ctx(), 1000);
      expect(out).toMatchObject({ claimed: 2, deferred: 1, applied: 1 });
      // The held one and the deferred one wait; the other person's event was applied.
      expect(await countBacklog(db())).toBe(2);
      await release();
      await drain();
      expect(await countBacklog(db())).toBe(0);
      const { rows } = await db().query<{ event_name: string; processed: boolean }>(
        `SELECT e.event_name, e.seq NOT IN (SELECT seq FROM event_backlog) AS processed
           FROM events e WHERE e.id = ANY($1::text[]) ORDER BY e.seq`,
        [ids],
      );
      expect(rows.map((r) => [r.event_name, r.processed])).toEqual([
        ['older', true],
        ['newer', true],
        ['someone else', true],
      ]);
    },
  );

  heldBySecondConnection.it(
    'defers an event that shares no identifier with the held older one, only the profile owning both',
    async () => {
      await drain();
      const anon = crypto.randomUUID();
      const email = `owner-${crypto.randomUUID()}@example.com`;
      await insertTestEvents(db(), svc.ws.id, [
        { anonymous_id: anon, identity: email, event_type: 'identify', event_name: 'identify' },
      ]);
      await drain();
      // The older event names the person by e-mail only, the newer by the device only.
      await expectNewerDeferred(
        { identity: email, event_type: 'page', event_name: 'older' },
        { anonymous_id: anon, event_type: 'page', event_name: 'newer' },
      );
    },
  );

  heldBySecondConnection.it(
    'defers an order’s later event while its first is held, though no identifier or profile links them',
    async () => {
      await drain();
      const order = (status: string, product: string) => ({
        order_id: ` ${crypto.randomUUID()} `,
        total: 5,
        status,
        items: [{ product_id: product, price: 5, quantity: 1 }],
      });
      const first = order('completed', 'FIRST');
      // The same order id, spelled with other spaces: the order is stored under the trimmed id.
      const later = { ...order('refunded', 'SECOND'), order_id: first.order_id.trim() };
      const [firstId] = await insertTestEvents(db(), svc.ws.id, [
        {
          anonymous_id: crypto.randomUUID(),
          event_type: 'order',
          event_name: 'Order Completed',
          payload: first,
        },
        {
          anonymous_id: crypto.randomUUID(),
          event_type: 'order',
          event_name: 'Order Refunded',
          payload: later,
        },
      ]);
      const release = await holdEvent(firstId!);
      expect(await processBatch(db(), ctx(), 1000)).toMatchObject({ claimed: 1, deferred: 1, applied: 0 });
      // Back on the backlog with its order id, so it holds back the order's events after it in turn.
      expect((await findPendingBefore(db(), Number.MAX_SAFE_INTEGER, [], 10)).map((p) => p.order_id)).toEqual(
        [first.order_id, later.order_id],
      );
      await release();
      await drain();
      const { rows } = await db().query<{ items: Array<{ product_id: string }>; status: string }>(
        'SELECT items, status FROM orders WHERE workspace_id = $1 AND order_id = $2',
        [svc.ws.id, later.order_id],
      );
      expect(rows.map((r) => [r.items.map((i) => i.product_id), r.status])).toEqual([
        [['FIRST'], 'refunded'],
      ]);
    },
  );

  /** A person (device and e-mail) who owns an order, all applied: the order's owner is their profile. */
  async function ownerOfAnOrder() {
    const [device, email, orderId] = [
      crypto.randomUUID(),
      `buyer-${crypto.randomUUID()}@example.com`,
      crypto.randomUUID(),
    ];
    await insertTestEvents(db(), svc.ws.id, [
      { anonymous_id: device, identity: email, event_type: 'identify', event_name: 'identify' },
      {
        anonymous_id: device,
        event_type: 'order',
        event_name: 'Order Placed',
        payload: {
          order_id: orderId,
          total: 5,
          status: 'pending',
          items: [{ product_id: 'P', price: 5, quantity: 1 }],
        },
      },
    ]);
    await drain();
    return { email, orderId };
  }
  const completion = (orderId: string) => ({
    anonymous_id: crypto.randomUUID(),
    event_type: 'order' as const,
    event_name: 'Order Completed',
    payload: {
      order_id: orderId,
      total: 5,
      status: 'completed',
      items: [{ product_id: 'P', price: 5, quantity: 1 }],
    },
  });

  heldBySecondConnection.it(
    'defers an order’s event from a device nobody linked while an older event of the order’s owner is held',
    async () => {
      await drain();
      const { email, orderId } = await ownerOfAnOrder();
      // The held event may merge the owner away: the completion must name whoever owns the order then.
      await expectNewerDeferred(
        { identity: email, event_type: 'identify', event_name: 'identify' },
        completion(orderId),
      );
    },
  );

  heldBySecondConnection.it(
    'defers an event of an order’s owner while an older event of that order, from a device nobody linked, is held',
    async () => {
      await drain();
      const { email, orderId } = await ownerOfAnOrder();
      // The held completion names the owner as it is before this newer event, which may merge it away.
      await expectNewerDeferred(completion(orderId), {
        identity: email,
        event_type: 'identify',
        event_name: 'identify',
      });
    },
  );

  heldBySecondConnection.it(
    'is vacuumed by one process at a time: a worker does not queue behind another one’s vacuum',
    async () => {
      // Another process's VACUUM (or ANALYZE) of the backlog holds this lock for its whole pass.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const holding = new Promise<void>((r) => (locked = r));
      const other = db().transaction(async (tx) => {
        await tx.query('LOCK TABLE event_backlog IN SHARE UPDATE EXCLUSIVE MODE');
        locked();
        await released;
      });
      await holding;
      try {
        // Returns at once (skipped) instead of waiting for the other pass to end.
        await expect(vacuumBacklog(db())).resolves.toBeUndefined();
      } finally {
        release();
        await other;
      }
    },
    10_000,
  );
});
