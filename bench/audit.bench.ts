/**
 * Issue 29: what the audit trail costs a management request. The entry is one INSERT, committed
 * before the answer leaves (platform/http/audit.ts), so a management request waits for one more
 * round trip and one more commit. Measured in one process per engine: the service's own app and a
 * second app over the same database whose audit sink does nothing, served side by side over HTTP
 * and called in turn, one request at a time (management requests are few; what matters is how much
 * longer each one takes), so both see the same database, caches and machine noise.
 *
 * Routes: `PATCH /tenant/products/{id}` (the lightest write there is: one UPDATE, so the entry is
 * the largest share it can be) and `POST /tenant/profiles` (a profile write through the merge
 * workflow). Figures: median latency with the trail beside the median without it (INFO), and the
 * entry's own cost (the difference of the medians) beside the ceiling it cannot beat, one durable
 * write: a one-row INSERT and its commit into a bare table, timed in the same rounds through the
 * same storage port. Target: the entry costs at most three times that: its row has fifteen
 * columns, a JSON diff and four or five index entries (time, action, key, and session or profile
 * where set) against the probe's one, and it goes through the hooks. On this shared machine the durable write itself varies
 * tenfold with the load (a WAL flush on PostgreSQL), which is why it is the ceiling and not a
 * fixed number of milliseconds.
 *
 *   npm run bench -- audit            (BENCH_ENGINES=pglite|postgres to run one engine)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import type { App } from '../src/platform/http/types';
import { createLogger } from '../src/platform/logger';
import { createRuntime } from '../src/runtime';
import {
  BENCH_RATE_LIMITS,
  dropSchema,
  type EngineName,
  engines,
  freePort,
  note,
  PG_URL,
  report,
} from './lib';

const WARMUP = 100;
const ROUNDS = Number(process.env.BENCH_AUDIT_ROUNDS ?? 1000);
const MAX_ENTRY_RATIO = 3;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;

/** On a port of BENCH_PORTS when set (a shared machine), else any. */
async function listen(app: App): Promise<string> {
  await app.listen({ port: await freePort(), host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

interface Route {
  name: string;
  method: string;
  path: string;
  body: (i: number) => unknown;
}

async function measure(engine: EngineName): Promise<void> {
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  // ROLE=api: the jobs a profile write queues (segment marks, rescoring) would otherwise run on this
  // process's event loop in the middle of the measurement.
  const env: Record<string, string> = { LOG_LEVEL: 'silent', CDP_INITIAL_ADMIN_KEY: adminKey, ROLE: 'api' };
  let dataDir: string | null = null;
  let schema: string | null = null;
  if (engine === 'pglite') {
    dataDir = mkdtempSync(join(tmpdir(), 'cdp-bench-audit-'));
    env.DATA_DIR = dataDir;
  } else {
    schema = `bench_${randomBytes(5).toString('hex')}`;
    env.DATABASE_URL = PG_URL;
    env.DATABASE_SCHEMA = schema;
  }
  const config = loadConfig(env);
  const rt = await createRuntime(config, createLogger('silent'));
  const plain = await buildApp({ ...rt.deps, audit: { write: async () => {} } });
  try {
    const db = rt.deps.db;
    await db.query('UPDATE workspaces SET settings = settings || $2::jsonb WHERE id = $1', [
      rt.bootstrap!.workspaceId,
      JSON.stringify(BENCH_RATE_LIMITS),
    ]);
    const audited = await listen(rt.app!);
    const bare = await listen(plain);
    const headers = { 'x-api-key': adminKey, 'content-type': 'application/json' };
    const created = await fetch(`${audited}/tenant/products`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ product_id: 'bench', name: 'bench' }),
    });
    if (!created.ok) throw new Error(`product set-up failed: ${await created.text()}`);

    const routes: Route[] = [
      {
        name: 'PATCH /tenant/products/{id}',
        method: 'PATCH',
        path: '/tenant/products/bench',
        body: (i) => ({ name: `n${i}` }),
      },
      {
        name: 'POST /tenant/profiles',
        method: 'POST',
        path: '/tenant/profiles',
        body: (i) => ({ identity: `bench-${i % 200}@example.com`, first_name: `F${i}` }),
      },
    ];
    await db.query('CREATE TABLE audit_bench_probe (id bigserial PRIMARY KEY, n int NOT NULL)');
    const probe = async (i: number) => {
      const t0 = performance.now();
      await db.query('INSERT INTO audit_bench_probe (n) VALUES ($1)', [i]);
      return performance.now() - t0;
    };
    for (const route of routes) {
      const times = { audited: [] as number[], plain: [] as number[], probe: [] as number[] };
      const send = async (base: string, i: number) => {
        const t0 = performance.now();
        const res = await fetch(`${base}${route.path}`, {
          method: route.method,
          headers,
          body: JSON.stringify(route.body(i)),
        });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`${route.name} answered ${res.status}`);
        return performance.now() - t0;
      };
      for (let i = 0; i < WARMUP + ROUNDS; i++) {
        // In turn, and each pair in alternating order, so neither side always goes first.
        const [first, second] =
          i % 2 === 0 ? (['audited', 'plain'] as const) : (['plain', 'audited'] as const);
        const a = await send(first === 'audited' ? audited : bare, i);
        const b = await send(second === 'audited' ? audited : bare, i);
        const c = await probe(i);
        if (i < WARMUP) continue;
        times[first].push(a);
        times[second].push(b);
        times.probe.push(c);
      }
      const withTrail = median(times.audited);
      const without = median(times.plain);
      const durableWrite = median(times.probe);
      report({
        name: `audit: ${route.name} median with the trail (${engine})`,
        value: withTrail,
        unit: 'ms',
        ceiling: { value: without, unit: 'ms without' },
        target: 'figure',
      });
      report({
        name: `audit: the entry's own cost on ${route.name} (${engine})`,
        value: withTrail - without,
        unit: 'ms',
        ceiling: { value: durableWrite, unit: 'ms one durable write' },
        target: `≤ ${MAX_ENTRY_RATIO}× one durable write`,
        pass: withTrail - without <= MAX_ENTRY_RATIO * durableWrite,
      });
      note(
        `${route.name} (${engine}): p99 ${p99(times.audited).toFixed(2)} ms with, ${p99(times.plain).toFixed(2)} ms without; ${ROUNDS} requests each`,
      );
    }
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log');
    note(`entries written (${engine}): ${rows[0]!.n}`);
  } finally {
    await plain.close();
    await rt.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (schema) await dropSchema(PG_URL, schema).catch(() => {});
  }
}

export default async function run(): Promise<void> {
  for (const engine of await engines()) await measure(engine);
}
