import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENGINE, startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { settle } from '../../test/settle';
import { letTimePass, waitUntil } from '../../test/wait';
import { deleteSettledFacts, writeOutbox } from '../modules/outbox';
import { type Receiver, startReceiver } from '../modules/webhooks/webhooks.test-kit';
import type { Job, JobHandler, JobRunner } from '../platform/jobs';
import { createSliceSizer } from '../platform/slices';
import {
  enqueueSweep,
  planRetention,
  RETENTION_QUEUE,
  type RetentionPayload,
  registerRetentionJobs,
  sweepWorkspace,
} from './retention';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Retention (docs/operations.md, "Retention"): each sweep of the personal-data registry removes
 * exactly its workspace's rows older than the cutoff, nothing of another workspace, nothing newer,
 * and never a delivery still pending. Rows are made through the API in two phases around a moment
 * T, then the sweeps run with the clock at T + 1 day and every setting at 1 day: what came before T
 * has expired, what came after has not. (Rows age from when the service wrote them, so a test moves
 * the clock, never the rows.)
 */
let svc: TestService;
let rx: Receiver;
let gone: string;
let a: TestWorkspace;
let b: TestWorkspace;

const DAY_MS = 86_400_000;
const ONE_DAY = {
  events_days: 1,
  dead_letters_days: 1,
  outbox_days: 1,
  segment_changes_days: 1,
  lineage_days: 1,
};
const db = () => svc.rt.deps.db;
const registry = () => svc.rt.deps.personalData;

async function call(ws: TestWorkspace, method: string, url: string, body?: unknown) {
  const res = await svc.call(method, url, { key: ws.adminKey, ...(body === undefined ? {} : { body }) });
  expect(res.status, res.text).toBeLessThan(300);
  return res.body?.data;
}

/** A person who is `pro` (a segment entry, lineage, a profile.created fact), and an event no one can hold. */
async function activity(ws: TestWorkspace, people: number): Promise<void> {
  for (let i = 0; i < people; i++) {
    await call(ws, 'POST', '/api/ingest', {
      event_type: 'identify',
      event_name: 'Signed up',
      anonymous_id: randomUUID(),
      identity: `${randomUUID()}@retention.test`,
      payload: { plan: 'pro', first_name: `P${i}` },
    });
  }
  // No usable identifier: a dead letter.
  await call(ws, 'POST', '/api/ingest', { identity: 'undefined', event_type: 'track', event_name: 'Lost' });
}

/** Every fact of the workspace read by the fan-out (its cursor's snapshot sees them all). */
async function fannedOut(ws: TestWorkspace): Promise<void> {
  await waitUntil(
    async () => {
      const { rows } = await db().query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox o WHERE workspace_id = $1 AND NOT pg_visible_in_snapshot(
           o.xid, (SELECT snap FROM webhook_cursors c WHERE c.workspace_id = o.workspace_id))`,
        [ws.id],
      );
      return rows[0]!.n === 0;
    },
    { what: 'the fan-out to read every fact', timeoutMs: 20_000 },
  );
}

async function settled(...spaces: TestWorkspace[]): Promise<void> {
  await settle(db());
  for (const ws of spaces) await fannedOut(ws);
}

/** A workspace's rows per table, written before `t` (events: seq ≤ `seq`) and after. */
async function census(ws: TestWorkspace, t: Date, seq: number): Promise<Census> {
  const { rows } = await db().query<Census>(
    `SELECT
       (SELECT count(*) FROM events WHERE workspace_id = $1 AND seq <= $3)::int AS events_old,
       (SELECT count(*) FROM events WHERE workspace_id = $1 AND seq > $3)::int AS events_new,
       (SELECT count(*) FROM event_profiles WHERE workspace_id = $1 AND seq <= $3)::int AS event_profiles_old,
       (SELECT count(*) FROM event_profiles WHERE workspace_id = $1 AND seq > $3)::int AS event_profiles_new,
       (SELECT count(*) FROM event_properties WHERE workspace_id = $1 AND seq <= $3)::int AS event_properties_old,
       (SELECT count(*) FROM event_properties WHERE workspace_id = $1 AND seq > $3)::int AS event_properties_new,
       (SELECT count(*) FROM dead_letters WHERE workspace_id = $1 AND created_at < $2)::int AS dead_letters_old,
       (SELECT count(*) FROM dead_letters WHERE workspace_id = $1 AND created_at >= $2)::int AS dead_letters_new,
       (SELECT count(*) FROM outbox WHERE workspace_id = $1 AND created_at < $2)::int AS outbox_old,
       (SELECT count(*) FROM outbox WHERE workspace_id = $1 AND created_at >= $2)::int AS outbox_new,
       (SELECT count(*) FROM webhook_deliveries WHERE workspace_id = $1 AND created_at < $2
           AND status <> 'pending')::int AS deliveries_old,
       (SELECT count(*) FROM webhook_deliveries WHERE workspace_id = $1 AND created_at < $2
           AND status = 'pending')::int AS deliveries_pending_old,
       (SELECT count(*) FROM webhook_deliveries WHERE workspace_id = $1 AND created_at >= $2)::int AS deliveries_new,
       (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
         WHERE d.workspace_id = $1 AND d.status = 'pending')::int AS attempts_of_pending,
       (SELECT count(*) FROM segment_changes c JOIN segments s ON s.id = c.segment_id
         WHERE s.workspace_id = $1 AND c.at < $2)::int AS segment_changes_old,
       (SELECT count(*) FROM segment_changes c JOIN segments s ON s.id = c.segment_id
         WHERE s.workspace_id = $1 AND c.at >= $2)::int AS segment_changes_new,
       (SELECT count(*) FROM segment_memberships m JOIN segments s ON s.id = m.segment_id
         WHERE s.workspace_id = $1)::int AS memberships,
       (SELECT count(*) FROM profile_lineage WHERE workspace_id = $1 AND recorded_at < $2)::int AS lineage_old,
       (SELECT count(*) FROM profile_lineage WHERE workspace_id = $1 AND recorded_at >= $2)::int AS lineage_new,
       (SELECT count(*) FROM profiles WHERE workspace_id = $1)::int AS profiles`,
    [ws.id, t, seq],
  );
  return rows[0]!;
}

/** A URL nothing listens on: deliveries to it fail and wait for their retry, pending. */
async function closedPort(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return `http://127.0.0.1:${port}/gone`;
}

/** The moment between the two phases, and the log's last seq at that moment. */
let t: Date;
let seqAtT: number;
type Census = Record<string, number> & { events_old: number; dead_letters_old: number; profiles: number };
let before: { a: Census; b: Census };

beforeAll(async () => {
  [svc, rx] = await Promise.all([startTestService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }), startReceiver()]);
  gone = await closedPort();
  a = await svc.newWorkspace('retention A');
  b = await svc.newWorkspace('retention B');
  for (const ws of [a, b]) {
    await call(ws, 'POST', '/tenant/webhooks', { url: `${rx.url}/${ws.id}`, events: ['profile.created'] });
    await call(ws, 'POST', '/tenant/segments', {
      name: 'pro',
      query: { attribute: 'plan', op: 'eq', value: 'pro' },
    });
  }
  // A receiver that never answers: its deliveries stay pending (retried later), whatever their age.
  await call(a, 'POST', '/tenant/webhooks', { url: gone, events: ['profile.created'] });

  // Phase 1: what will have expired.
  await activity(a, 3);
  await activity(b, 3);
  await rx.waitFor(`/${a.id}`, 3);
  await rx.waitFor(`/${b.id}`, 3);
  await waitUntil(
    async () =>
      (
        await db().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_deliveries WHERE workspace_id = $1 AND status = 'pending'
             AND attempts > 0`,
          [a.id],
        )
      ).rows[0]!.n === 3,
    { what: 'three deliveries to the closed port, tried and waiting for their retry' },
  );
  await settled(a, b);
  t = new Date();
  seqAtT = Number(
    (await db().query<{ s: string }>('SELECT coalesce(max(seq), 0) AS s FROM events')).rows[0]!.s,
  );
  await letTimePass(20, 'what the second phase writes is written strictly after T');

  // Phase 2: what has not expired yet.
  await activity(a, 2);
  await rx.waitFor(`/${a.id}`, 5);
  await settled(a, b);
  await call(a, 'PATCH', '/tenant/settings', { retention: ONE_DAY });
  await call(b, 'PATCH', '/tenant/settings', { retention: ONE_DAY });
  before = { a: await census(a, t, seqAtT), b: await census(b, t, seqAtT) };
});
afterAll(async () => {
  await Promise.all([svc?.close(), rx?.close()]);
});

describe(`retention sweeps (${ENGINE})`, () => {
  it('has rows of every kind on both sides of T to work on', () => {
    for (const c of [before.a, before.b]) {
      for (const k of [
        'events_old',
        'event_profiles_old',
        'event_properties_old',
        'dead_letters_old',
        'outbox_old',
        'deliveries_old',
        'segment_changes_old',
        'lineage_old',
      ]) {
        expect(c[k], k).toBeGreaterThan(0);
      }
    }
    for (const k of ['events_new', 'dead_letters_new', 'outbox_new', 'segment_changes_new', 'lineage_new']) {
      expect(before.a[k], k).toBeGreaterThan(0);
    }
    expect(before.a.deliveries_pending_old).toBe(3);
  });

  it('removes exactly the expired rows of its workspace: nothing newer, nothing pending, nothing of another workspace', async () => {
    const { retention } = await svc.rt.deps.settings.read(db(), a.id);
    const r = await sweepWorkspace(db(), registry(), a.id, retention, new Date(t.getTime() + DAY_MS));
    expect(r.done).toBe(true);
    const after = await census(a, t, seqAtT);
    expect(after).toEqual({
      ...before.a,
      events_old: 0,
      event_profiles_old: 0,
      event_properties_old: 0,
      dead_letters_old: 0,
      outbox_old: 0,
      deliveries_old: 0,
      segment_changes_old: 0,
      lineage_old: 0,
    });
    // The dead letters' sweep took their events; the events' sweep the rest.
    expect(r.removed).toEqual({
      dead_letters: before.a.dead_letters_old,
      events: before.a.events_old - before.a.dead_letters_old,
      outbox: before.a.outbox_old,
      webhook_deliveries: before.a.deliveries_old,
      segment_changes: before.a.segment_changes_old,
      profile_lineage: before.a.lineage_old,
      // Kept 400 days by default: nothing of this test is that old.
      audit_log: 0,
    });
    expect(await census(b, t, seqAtT)).toEqual(before.b);
    // The profiles and their memberships stay: only their history got shorter.
    const list = await call(a, 'GET', '/tenant/profiles?limit=50');
    expect(list).toHaveLength(before.a.profiles);
  });

  it('removes nothing for a setting of forever, however old the rows', async () => {
    const forever = Object.fromEntries([...Object.keys(ONE_DAY), 'audit_days'].map((k) => [k, 'forever']));
    await call(b, 'PATCH', '/tenant/settings', { retention: forever });
    const { retention } = await svc.rt.deps.settings.read(db(), b.id);
    const r = await sweepWorkspace(
      db(),
      registry(),
      b.id,
      retention,
      new Date(Date.now() + 200 * 365 * DAY_MS),
    );
    expect(r).toMatchObject({ removed: {}, done: true, batches: 0 });
    expect(await census(b, t, seqAtT)).toEqual(before.b);
    await call(b, 'PATCH', '/tenant/settings', { retention: { ...ONE_DAY, audit_days: null } });
  });

  it('works in batches of the size it is given, taking more than one for more rows than a batch', async () => {
    const { retention } = await svc.rt.deps.settings.read(db(), b.id);
    const sizer = createSliceSizer({ targetMs: 10, min: 1, max: 2, initial: 2 });
    const r = await sweepWorkspace(db(), registry(), b.id, retention, new Date(t.getTime() + DAY_MS), {
      sizer,
    });
    expect(r.done).toBe(true);
    expect(r.removed.events).toBe(before.b.events_old - before.b.dead_letters_old);
    // Two at most per batch, and one more for each sweep to find that nothing is left.
    const removed = Object.values(r.removed).reduce((x, y) => x + y, 0);
    expect(r.batches).toBeGreaterThanOrEqual(Math.ceil(removed / 2));
    expect((await census(b, t, seqAtT)).events_old).toBe(0);
  });

  it('keeps a fact the fan-out has not read yet, however old, and removes it once read', async () => {
    const ws = await svc.newWorkspace('retention unread');
    await call(ws, 'POST', '/tenant/webhooks', { url: `${rx.url}/unread`, events: ['order.completed'] });
    const read = await db().query<{ s: string }>('SELECT pg_current_snapshot()::text AS s');
    await writeOutbox(db(), ws.id, 'churn.risk_escalated', { profile_id: randomUUID() });
    const future = new Date(Date.now() + DAY_MS);
    // Read up to a snapshot taken before the fact: it is owed to a consumer.
    expect(await deleteSettledFacts(db(), ws.id, future, read.rows[0]!.s, 100)).toBe(0);
    await fannedOut(ws);
    const { retention } = await svc.rt.deps.settings.read(db(), ws.id);
    const r = await sweepWorkspace(db(), registry(), ws.id, retention, new Date(Date.now() + 31 * DAY_MS));
    expect(r.removed.outbox).toBe(1);
  });

  it('counts every fact of a workspace without a subscription as settled: no one will read it', async () => {
    const ws = await svc.newWorkspace('retention unsubscribed');
    await activity(ws, 2);
    await settle(db());
    const { retention } = await svc.rt.deps.settings.read(db(), ws.id);
    const r = await sweepWorkspace(db(), registry(), ws.id, retention, new Date(Date.now() + 31 * DAY_MS));
    // Two profile.created and two segment-free facts at most: whatever the workspace wrote, all of it.
    expect(r.removed.outbox).toBeGreaterThanOrEqual(2);
    const left = await db().query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE workspace_id = $1',
      [ws.id],
    );
    expect(left.rows[0]!.n).toBe(0);
  });
});

describe(`the retention job (${ENGINE})`, () => {
  const jobsOf = async (ws: TestWorkspace) =>
    (
      await db().query<Job<RetentionPayload>>(
        'SELECT * FROM jobs WHERE queue = $1 AND workspace_id = $2 ORDER BY id',
        [RETENTION_QUEUE, ws.id],
      )
    ).rows;

  it('sweeps a workspace as a job of its own and reports what it removed, for cdp jobs', async () => {
    const ws = await svc.newWorkspace('retention job');
    await activity(ws, 2);
    await settle(db());
    await call(ws, 'PATCH', '/tenant/settings', { retention: { events_days: 1 } });
    const { id } = await enqueueSweep(db(), ws.id, new Date(Date.now() + 2 * DAY_MS));
    const job = await waitUntil(
      async () => (await jobsOf(ws)).find((j) => j.id === id && j.state === 'succeeded'),
      { what: 'the sweep job to succeed', timeoutMs: 20_000 },
    );
    // Dead letters are kept forever here, but an event goes at events_days whatever it is: the
    // dead-lettered one too, and its dead letter with it.
    expect(job.result).toMatchObject({ done: true, removed: { events: 3 } });
    expect((job.result as { removed: Record<string, number> }).removed.dead_letters).toBeUndefined();
    const left = await db().query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE workspace_id = $1',
      [ws.id],
    );
    expect(left.rows[0]!.n).toBe(0);
  });

  it('plans one job per workspace with something that can expire, none for a workspace that keeps everything', async () => {
    const keeper = await svc.newWorkspace('retention keeps all');
    await call(keeper, 'PATCH', '/tenant/settings', {
      retention: Object.fromEntries(
        [
          'events_days',
          'dead_letters_days',
          'outbox_days',
          'segment_changes_days',
          'lineage_days',
          'audit_days',
        ].map((k) => [k, 'forever']),
      ),
    });
    const other = await svc.newWorkspace('retention default');
    const queued = await planRetention(db(), registry(), new Date());
    expect(queued).toBeGreaterThanOrEqual(2);
    expect(await jobsOf(keeper)).toEqual([]);
    const planned = await jobsOf(other);
    // (The service's own hourly plan may have queued one too: the same key.)
    expect([...new Set(planned.map((j) => j.key))]).toEqual([`ws:${other.id}`]);
  });

  it('stops at its budget, logs what it did, and queues its continuation behind other workspaces', async () => {
    const ws = await svc.newWorkspace('retention budget');
    let handler: JobHandler<RetentionPayload> | null = null;
    const fake = {
      register: (_q: string, h: JobHandler<RetentionPayload>) => {
        handler = h;
      },
      schedule: async () => {},
    } as unknown as JobRunner;
    const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
    const log = {
      info: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }),
      debug: () => {},
    } as unknown as Logger;
    await registerRetentionJobs(fake, {
      log,
      settings: svc.rt.deps.settings,
      registry: registry(),
      budgetMs: 0,
    });
    const reports: unknown[] = [];
    const at = new Date().toISOString();
    await handler!(
      { workspace_id: ws.id, at },
      {
        db: db().lane('analytics'),
        signal: new AbortController().signal,
        job: { key: `ws:${ws.id}` } as Job<RetentionPayload>,
        report: (r) => reports.push(r),
      },
    );
    expect(reports).toEqual([expect.objectContaining({ done: false })]);
    expect(lines).toEqual([
      {
        fields: expect.objectContaining({ workspace_id: ws.id, done: false }),
        msg: 'retention: workspace swept',
      },
    ]);
    // The continuation keeps the plan's clock, under a key of its own; the service's runner takes it.
    const next = await waitUntil(
      async () => (await jobsOf(ws)).find((j) => j.key === `ws:${ws.id}:more` && j.state === 'succeeded'),
      { what: 'the continuation to run', timeoutMs: 20_000 },
    );
    expect(next.payload).toEqual({ workspace_id: ws.id, at });
    expect(next.result).toMatchObject({ done: true });
  });
});
