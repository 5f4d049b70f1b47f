import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadSegmentDataset } from '../bench/segments-data';
import { startTestService, type TestService, type TestWorkspace } from './harness';
import { quantile, quietTraffic, type Tenant, worstNeighbour } from './neighbour-workload';
import { ENGINE } from './skips';

// A workload of its own for a bounded time, on a busy 2-core machine.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

/**
 * One tenant cannot take the instance. Workspace A does the worst it can through its own API and
 * within its own limits (test/neighbour-workload.ts); meanwhile workspace B sends single events and
 * reads profiles. B must never get a 5xx, and its p99 must stay within NEIGHBOUR_P99_MS, a bound
 * that holds on a shared 2-core CI machine where A's analytics and B compete for the same cores
 * (docs/operations.md, "Fair shares"; before the lanes, 2.6 s on PGlite and 0.9–1.4 s on PostgreSQL);
 * the tight targets are the benchmark's (`npm run bench -- neighbour`).
 */
const NEIGHBOUR_P99_MS = 1_000;
/**
 * Where the machine itself is the bottleneck (B's idle p99 over 125 ms, seen with other suites
 * running beside this one), the bound is this multiple of B's idle p99 from the same run instead.
 */
const IDLE_MULTIPLE = 8;
const SIZE =
  ENGINE === 'pglite'
    ? { profiles: 5_000, events: 50_000, orders: 5_000 }
    : { profiles: 20_000, events: 200_000, orders: 20_000 };
const WORST_SECONDS = 15;

let svc: TestService;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  svc = await startTestService({ LOG_LEVEL: 'silent' });
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  const [wa, wb]: TestWorkspace[] = [await svc.newWorkspace('noisy A'), await svc.newWorkspace('quiet B')];
  await loadSegmentDataset(svc.rt.deps.db, wa!.id, SIZE);
  a = { url, key: wa!.adminKey };
  b = { url, key: wb!.adminKey };
});
afterAll(async () => svc?.close());

describe('a noisy neighbour', () => {
  it('never gives workspace B a 5xx, and keeps its p99 within the documented bound', async () => {
    const idle = await quietTraffic(b, performance.now() + 3_000);
    const until = performance.now() + WORST_SECONDS * 1000;
    const [busy, aGot] = await Promise.all([quietTraffic(b, until), worstNeighbour(a, until)]);
    const summary = {
      idle_p99_ms: Math.round(
        quantile(
          idle.map((s) => s.ms),
          0.99,
        ),
      ),
      busy_p99_ms: Math.round(
        quantile(
          busy.map((s) => s.ms),
          0.99,
        ),
      ),
      busy_ingest_p99_ms: Math.round(
        quantile(
          busy.filter((s) => s.kind === 'ingest').map((s) => s.ms),
          0.99,
        ),
      ),
      busy_read_p99_ms: Math.round(
        quantile(
          busy.filter((s) => s.kind === 'read').map((s) => s.ms),
          0.99,
        ),
      ),
      busy_requests: busy.length,
      a: Object.fromEntries([...aGot].map(([k, v]) => [k, v.length])),
    };
    console.log(`noisy neighbour (${ENGINE}): ${JSON.stringify(summary)}`);
    // A did its worst: each kind of request ran.
    for (const kind of ['calculate', 'save segment', 'fit', 'batch', 'preflight']) {
      expect(aGot.get(kind)?.length ?? 0, kind).toBeGreaterThan(0);
    }
    expect(
      busy.filter((s) => s.status >= 500).map((s) => `${s.kind} ${s.status}`),
      'B’s 5xx answers',
    ).toEqual([]);
    // On a machine so busy that B's idle p99 alone is over 125 ms, the bound scales with it.
    const bound = Math.max(NEIGHBOUR_P99_MS, IDLE_MULTIPLE * summary.idle_p99_ms);
    expect(
      summary.busy_p99_ms,
      `B's p99 with A at its worst (idle: ${summary.idle_p99_ms} ms; bound ${bound} ms)`,
    ).toBeLessThanOrEqual(bound);
  });
});
