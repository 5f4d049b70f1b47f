/**
 * Issue 24: the console.
 *
 * - Live events beside ingestion: single-event `POST /api/ingest` at a steady 2,000 requests/s
 *   (autocannon, 20 connections) on the real service (ROLE=all), p99 first without any console,
 *   then with 50 consoles holding `GET /tenant/events/stream` open (10 in each of 5 workspaces,
 *   the per-workspace cap; the events go to the 5 workspaces in turn). Target: p99 with the
 *   streams ≤ 1.2 × p99 without them, same run. Also: the share of the ingested events the streams
 *   received.
 * - The JavaScript the first page loads (index.html's scripts and module preloads), Brotli-compressed
 *   as served: target ≤ 300 KB.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
import {
  BENCH_RATE_LIMITS,
  engines,
  load,
  note,
  ROOT,
  report,
  type Service,
  sleep,
  startService,
} from './lib';

const RATE = 2_000;
const SECONDS = 8;
const WORKSPACES = 5;
const STREAMS_PER_WORKSPACE = 10;

/**
 * The 50 consoles, in a process of their own: reading and decoding the streams in the bench's
 * process would slow autocannon's own event loop and show up as ingest latency that is not the
 * service's.
 */
const CONSOLES = `
const [url, keys, per] = [process.env.URL, process.env.KEYS.split(','), Number(process.env.PER)];
let received = 0;
const aborts = [];
(async () => {
  for (const key of keys) for (let i = 0; i < per; i++) {
    const abort = new AbortController();
    aborts.push(abort);
    const res = await fetch(url + '/tenant/events/stream', { headers: { 'x-api-key': key, accept: 'text/event-stream' }, signal: abort.signal });
    if (res.status !== 200) { console.log('refused ' + res.status); process.exit(1); }
    (async () => {
      const decoder = new TextDecoder();
      try { for await (const chunk of res.body) received += decoder.decode(chunk, { stream: true }).split('event: event\\n').length - 1; } catch {}
    })();
  }
  console.log('open');
})();
process.on('SIGTERM', () => { for (const a of aborts) a.abort(); console.log('received ' + received); process.exit(0); });
`;

interface Consoles {
  /** Closes every stream; resolves with the events they received. */
  close(): Promise<number>;
}

async function openConsoles(url: string, keys: string[]): Promise<Consoles> {
  const child = spawn(process.execPath, ['-e', CONSOLES], {
    env: { PATH: process.env.PATH ?? '', URL: url, KEYS: keys.join(','), PER: String(STREAMS_PER_WORKSPACE) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (let i = 0; i < 600 && !out.includes('open'); i++) {
    if (out.includes('refused') || child.exitCode !== null) throw new Error(`consoles: ${out}`);
    await sleep(50);
  }
  if (!out.includes('open')) throw new Error(`consoles did not open their streams: ${out}`);
  return {
    async close() {
      child.kill('SIGTERM');
      await exited;
      return Number(/received (\d+)/.exec(out)?.[1] ?? 0);
    },
  };
}

async function workspaces(svc: Service, operatorToken: string): Promise<string[]> {
  const keys = [svc.adminKey];
  for (let i = 1; i < WORKSPACES; i++) {
    const res = await fetch(`${svc.url}/system/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `bench console ${i}` }),
    });
    const body = (await res.json()) as { data: { api_key: { api_key: string } } };
    const key = body.data.api_key.api_key;
    await fetch(`${svc.url}/tenant/settings`, {
      method: 'PATCH',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify(BENCH_RATE_LIMITS),
    });
    keys.push(key);
  }
  return keys;
}

/** Events for the workspaces in turn: the key travels in the body (`writeKey`), so one run feeds all. */
const bodies = (keys: string[]) =>
  Array.from({ length: 1000 }, (_, i) =>
    JSON.stringify({
      event_type: 'track',
      event_name: 'Product Viewed',
      anonymous_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      payload: { product_id: `p-${i % 50}`, price: 19.99 },
      writeKey: keys[i % keys.length],
    }),
  );

function firstPageJs(): { raw: number; brotli: number; files: number } | null {
  const dist = join(ROOT, 'web', 'dist');
  let html: string;
  try {
    html = readFileSync(join(dist, 'index.html'), 'utf8');
  } catch {
    return null;
  }
  const srcs = new Set<string>();
  for (const m of html.matchAll(/<script[^>]+src="([^"]+)"/g)) srcs.add(m[1]!);
  for (const m of html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="([^"]+)"/g)) srcs.add(m[1]!);
  let raw = 0;
  let brotli = 0;
  for (const src of srcs) {
    const path = join(dist, src.replace(/^\//, ''));
    raw += statSync(path).size;
    brotli += brotliCompressSync(readFileSync(path), {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
    }).length;
  }
  return { raw, brotli, files: srcs.size };
}

export default async function run(): Promise<void> {
  const js = firstPageJs();
  if (js) {
    report({
      name: 'console first page JS (brotli)',
      value: js.brotli / 1024,
      unit: 'KB',
      target: '≤ 300 KB',
      pass: js.brotli <= 300 * 1024,
    });
    note(`${js.files} files, ${(js.raw / 1024).toFixed(0)} KB before compression`);
  } else note('web/dist is not built: the first page JS figure is skipped (npm install builds it)');

  for (const engine of await engines()) {
    const operatorToken = `op_${'b'.repeat(32)}`;
    const svc = await startService({ engine, env: { CDP_OPERATOR_TOKEN: operatorToken } });
    try {
      const keys = await workspaces(svc, operatorToken);
      const opts = {
        url: `${svc.url}/api/ingest`,
        method: 'POST' as const,
        headers: { 'content-type': 'application/json' },
        bodies: bodies(keys),
        connections: 20,
        duration: SECONDS,
        overallRate: RATE,
      };
      const without = await load(opts);

      const consoles = await openConsoles(svc.url, keys);
      const withStreams = await load({ ...opts, warmup: 1 });
      const received = await consoles.close();

      report({
        name: `${engine} ingest p99 with 50 live-event streams`,
        value: withStreams.p99,
        unit: 'ms',
        ceiling: { value: without.p99, unit: 'ms without streams' },
        target: '≤ 1.2 × without',
        pass: withStreams.p99 <= without.p99 * 1.2,
      });
      note(
        `${RATE}/s asked: ${without.rps.toFixed(0)}/s without streams (p50 ${without.p50} ms), ` +
          `${withStreams.rps.toFixed(0)}/s with (p50 ${withStreams.p50} ms); non-2xx ${without.non2xx}/${withStreams.non2xx}`,
      );
      // Each event reaches the 10 streams of its workspace; the measured run plus its warm-up was sent.
      note(`streams received ${received} events (each event goes to ${STREAMS_PER_WORKSPACE} streams)`);
    } finally {
      await svc.stop();
    }
  }
}
