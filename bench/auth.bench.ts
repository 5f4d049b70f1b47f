/**
 * Issue 2: the cost of authentication. An authenticated `GET /tenant/apikeys` (key → cache, scope,
 * rate limiter, one list query, response serialization) against a bare Fastify route answering the
 * same bytes, same run, autocannon at 100 connections. Targets: ≥ 70% of the bare route's
 * throughput and p99 ≤ 5 ms.
 *
 * It also checks that a warm key costs no database lookup: the service's key cache counters
 * (GET /system/stats with an operator token) count every lookup that went to the database.
 */
import { randomBytes } from 'node:crypto';
import {
  type BareRoute,
  type EngineName,
  engines,
  load,
  note,
  PG_URL,
  report,
  type Service,
  startBareServer,
  startService,
} from './lib';

const CONNECTIONS = 100;
const SECONDS = 8;

interface Variant {
  label: string;
  engine: EngineName;
  env: Record<string, string>;
}

async function variants(): Promise<Variant[]> {
  const out: Variant[] = [];
  for (const engine of await engines()) {
    if (engine === 'pglite') {
      out.push({ label: 'pglite', engine, env: {} });
      out.push({ label: 'pglite in-process', engine, env: { PGLITE_IN_PROCESS: '1' } });
    } else {
      out.push({ label: engine, engine, env: {} });
    }
  }
  return out;
}

/** The service's key cache counters (GET /system/stats, operator token); null if absent. */
async function keyCache(svc: Service, token: string): Promise<{ hits: number; misses: number } | null> {
  const res = await fetch(`${svc.url}/system/stats`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) return null;
  const body = (await res.json()) as { data?: { key_cache?: { hits: number; misses: number } } };
  return body.data?.key_cache ?? null;
}

export default async function run(): Promise<void> {
  for (const v of await variants()) {
    // ROLE=api: the figures are the HTTP path's; a worker in the same process would only add its
    // own unrelated polling to the noise.
    const operatorToken = randomBytes(24).toString('base64url');
    const svc = await startService({
      engine: v.engine,
      env: { ROLE: 'api', CDP_OPERATOR_TOKEN: operatorToken, ...v.env },
    });
    const headers = { 'x-api-key': svc.adminKey };
    const sample = await fetch(`${svc.url}/tenant/apikeys`, { headers });
    const body = await sample.text();
    if (sample.status !== 200) throw new Error(`GET /tenant/apikeys answered ${sample.status}: ${body}`);
    const contentType = sample.headers.get('content-type') ?? 'application/json; charset=utf-8';
    const bareRoutes: BareRoute[] = [
      { method: 'GET', path: '/tenant/apikeys', status: 200, body, contentType },
    ];
    // On PostgreSQL a second ceiling: the same bytes after one trivial query on a pool like the
    // service's. On two cores the database server, the load generator and the service share the CPU,
    // so this, not the bare route, is the most any route that reads the database can do here.
    if (v.engine === 'postgres') {
      bareRoutes.push({ ...bareRoutes[0]!, path: '/with-query', query: { url: PG_URL, sql: 'SELECT 1' } });
    }
    const bare = await startBareServer(bareRoutes);
    try {
      const ceiling = await load({
        url: `${bare.url}/tenant/apikeys`,
        connections: CONNECTIONS,
        duration: SECONDS,
      });
      const real = await load({
        url: `${svc.url}/tenant/apikeys`,
        headers,
        connections: CONNECTIONS,
        duration: SECONDS,
      });
      const queryCeiling =
        v.engine === 'postgres'
          ? await load({ url: `${bare.url}/with-query`, connections: CONNECTIONS, duration: SECONDS })
          : null;
      // The service's own floor: a public route with no key, no query (where the rest goes).
      const floor = await load({ url: `${svc.url}/health`, connections: CONNECTIONS, duration: SECONDS });
      // Authenticated (key, scope, rate limiter) but refused by validation before any query: what
      // the key path costs without the list query (a 400 answer, so all responses are counted).
      const noQuery = await load({
        url: `${svc.url}/tenant/apikeys?limit=0`,
        headers,
        connections: CONNECTIONS,
        duration: SECONDS,
      });
      const name = `auth ${v.label} GET /tenant/apikeys`;
      report({
        name: `${name} throughput`,
        value: real.rps,
        unit: 'req/s',
        ceiling: { value: ceiling.rps, unit: 'req/s' },
        target: '≥ 0.70 of ceiling',
        pass: real.rps >= 0.7 * ceiling.rps && real.non2xx === 0,
      });
      report({
        name: `${name} p50`,
        value: real.p50,
        unit: 'ms',
        ceiling: { value: ceiling.p50, unit: 'ms' },
        target: 'info',
      });
      report({
        name: `${name} p99`,
        value: real.p99,
        unit: 'ms',
        ceiling: { value: ceiling.p99, unit: 'ms' },
        target: '≤ 5 ms',
        pass: real.p99 <= 5,
      });
      if (queryCeiling) {
        report({
          name: `${name} throughput vs a bare route that runs one query`,
          value: real.rps,
          unit: 'req/s',
          ceiling: { value: queryCeiling.rps, unit: 'req/s' },
          target: 'info',
        });
      }
      report({
        name: `auth ${v.label} service GET /health (no key, no query)`,
        value: floor.rps,
        unit: 'req/s',
        ceiling: { value: ceiling.rps, unit: 'req/s' },
        target: 'info',
      });
      report({
        name: `auth ${v.label} authenticated, refused before the query (400)`,
        value: noQuery.requests / noQuery.seconds,
        unit: 'req/s',
        ceiling: { value: ceiling.rps, unit: 'req/s' },
        target: 'info',
      });
      if (real.non2xx > 0 || real.errors > 0) note(`${real.non2xx} non-2xx answers, ${real.errors} errors`);
      note(
        `${real.requests} requests measured (bare: ${ceiling.requests}), ${CONNECTIONS} connections, ${SECONDS} s`,
      );

      // Every lookup that missed the cache went to the database; a warm key should never miss.
      const cache = await keyCache(svc, operatorToken);
      if (cache) {
        report({
          name: `auth ${v.label} key lookups reaching the database`,
          value: cache.misses,
          unit: 'lookups',
          target: `≤ 1 (cache hits: ${cache.hits})`,
          pass: cache.misses <= 1,
        });
      } else {
        note('GET /system/stats unavailable: key cache misses not counted');
      }
    } finally {
      await bare.stop();
      await svc.stop();
    }
  }
}
