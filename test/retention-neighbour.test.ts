import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadSegmentDataset } from '../bench/segments-data';
import type { Job } from '../src/platform/jobs';
import { enqueueSweep, RETENTION_QUEUE, type SweepReport } from '../src/workflows';
import { startTestService, type TestService, type TestWorkspace } from './harness';
import { quantile, quietTraffic, type Sample, type Tenant } from './neighbour-workload';
import { ENGINE } from './skips';
import { waitUntil } from './wait';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 240_000 });

/**
 * A large retention sweep is one workspace's background work like any other (docs/operations.md,
 * "Fair shares"): while the job runner removes workspace A's expired history, in batches and in
 * jobs that hand their slot on, workspace B's ingest and reads keep flowing. B must get no 5xx and
 * keep its p99 within the bound test/noisy-neighbour.test.ts holds on a shared 2-core CI machine
 * (1 s, or 8× B's idle p99 on a machine so busy that the idle p99 alone passes 125 ms); the tight
 * figures are the benchmark's (`npm run bench -- retention`).
 */
const P99_BOUND_MS = 1_000;
const IDLE_MULTIPLE = 8;
const SIZE =
  ENGINE === 'pglite'
    ? { profiles: 2_000, events: 40_000, orders: 0 }
    : { profiles: 10_000, events: 200_000, orders: 0 };
const DAY_MS = 86_400_000;

let svc: TestService;
let wa: TestWorkspace;
let b: Tenant;

beforeAll(async () => {
  svc = await startTestService({ LOG_LEVEL: 'silent' });
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  wa = await svc.newWorkspace('retention A');
  const wb = await svc.newWorkspace('quiet B');
  await loadSegmentDataset(svc.rt.deps.db, wa.id, SIZE);
  const res = await svc.call('PATCH', '/tenant/settings', {
    key: wa.adminKey,
    body: { retention: { events_days: 1 } },
  });
  expect(res.status, res.text).toBe(200);
  b = { url, key: wb.adminKey };
});
afterAll(async () => svc?.close());

const eventsOf = async (workspaceId: string) =>
  (
    await svc.rt.deps.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE workspace_id = $1',
      [workspaceId],
    )
  ).rows[0]!.n;

describe(`a large retention sweep (${ENGINE})`, () => {
  it('removes a workspace’s whole expired history in batches while its neighbour’s ingest keeps flowing', async () => {
    const idle = await quietTraffic(b, performance.now() + 3_000);
    const db = svc.rt.deps.db;
    // Two days from now, A's whole history (received today, kept one day) has expired.
    await enqueueSweep(db, wa.id, new Date(Date.now() + 2 * DAY_MS));
    const jobs = async () =>
      (
        await db.query<Job>('SELECT * FROM jobs WHERE queue = $1 AND workspace_id = $2 ORDER BY id', [
          RETENTION_QUEUE,
          wa.id,
        ])
      ).rows;
    let swept = false;
    const watch = waitUntil(
      async () => {
        const all = await jobs();
        return (
          all.length > 0 &&
          all.every((j) => j.state === 'succeeded') &&
          all.some((j) => (j.result as SweepReport)?.done)
        );
      },
      { what: 'the sweep of A to end', timeoutMs: 240_000, intervalMs: 250 },
    ).finally(() => {
      swept = true;
    });
    const busy: Sample[] = [];
    while (!swept) busy.push(...(await quietTraffic(b, performance.now() + 1_000)));
    await watch;

    const reports = (await jobs()).map((j) => j.result as SweepReport);
    const removed = reports.reduce((n, r) => n + (r.removed.events ?? 0), 0);
    const batches = reports.reduce((n, r) => n + r.batches, 0);
    const p99 = (xs: readonly Sample[]) =>
      quantile(
        xs.map((s) => s.ms),
        0.99,
      );
    console.log(
      `retention neighbour (${ENGINE}): ${JSON.stringify({
        removed,
        batches,
        jobs: reports.length,
        sweep_ms: reports.reduce((n, r) => n + r.ms, 0),
        b_idle_p99_ms: Math.round(p99(idle)),
        b_busy_p99_ms: Math.round(p99(busy)),
        b_requests: busy.length,
      })}`,
    );
    expect(removed).toBe(SIZE.events);
    expect(await eventsOf(wa.id)).toBe(0);
    expect(batches).toBeGreaterThan(10);
    // B's own events are all there, and it was served all along.
    expect(busy.filter((s) => s.status >= 500).map((s) => `${s.kind} ${s.status}`)).toEqual([]);
    expect(busy.length).toBeGreaterThan(10);
    const bound = Math.max(P99_BOUND_MS, IDLE_MULTIPLE * p99(idle));
    expect(p99(busy), `B's p99 during the sweep (idle ${Math.round(p99(idle))} ms)`).toBeLessThanOrEqual(
      bound,
    );
  });
});
