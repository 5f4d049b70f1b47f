/**
 * The console's pages in headless Chromium (issue 24's browser benchmarks), on the demo dataset:
 *
 * - **First page**: time from navigation to the overview's figures and chart on screen (cold cache,
 *   signed in), and the JavaScript it loads over the wire (target ≤ 300 KB compressed).
 * - **Profile page**: time until a profile's page is interactive (its identity graph drawn, the
 *   merge button ready).
 * - **Requests per page view** for every page, and that none asks for more than one page of a
 *   collection (every list request carries a `limit` of at most 100).
 *
 * Needs Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH) and a built console (web/dist).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { generateDemoEvents } from '../src/modules/demo/demo.generator';
import { engines, note, ROOT, report, sleep, startService } from './lib';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CUSTOMERS = Number(process.env.BENCH_CONSOLE_CUSTOMERS ?? 500);
const JS_BUDGET = 300 * 1024;

interface Traffic {
  scriptBytes: number;
  scripts: number;
  api: string[];
}

/** Records what the page downloads from now on (cache disabled): script bytes and API requests. */
async function watch(page: Page): Promise<() => Traffic> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const kinds = new Map<string, { type: string; url: string }>();
  const t: Traffic = { scriptBytes: 0, scripts: 0, api: [] };
  cdp.on('Network.responseReceived', (e) => kinds.set(e.requestId, { type: e.type, url: e.response.url }));
  cdp.on('Network.loadingFinished', (e) => {
    const k = kinds.get(e.requestId);
    if (!k) return;
    if (k.type === 'Script') {
      t.scriptBytes += e.encodedDataLength;
      t.scripts += 1;
    }
    if (k.type === 'Fetch' || k.type === 'XHR') t.api.push(new URL(k.url).pathname + new URL(k.url).search);
  });
  return () => ({ ...t, api: [...t.api] });
}

async function ingestDemo(url: string, key: string): Promise<number> {
  let batch: unknown[] = [];
  let sent = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const res = await fetch(`${url}/tenant/ingest/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(batch),
    });
    if (res.status !== 202) throw new Error(`ingest: ${res.status} ${await res.text()}`);
    sent += batch.length;
    batch = [];
  };
  for (const e of generateDemoEvents({ seed: 1, customers: CUSTOMERS, now: new Date() })) {
    batch.push(e);
    if (batch.length === 1000) await flush();
  }
  await flush();
  // Processed when the backlog is empty (GET /tenant/stats), within a bound.
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const s = await fetch(`${url}/tenant/stats`, { headers: { 'x-api-key': key } });
    if (s.ok && ((await s.json()) as { data: { ingestion_backlog: number } }).data.ingestion_backlog === 0)
      break;
    await sleep(500);
  }
  return sent;
}

export default async function run(): Promise<void> {
  if (!existsSync(CHROMIUM)) return note(`skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);
  if (!existsSync(join(ROOT, 'web', 'dist', 'index.html')))
    return note('skipped: web/dist is not built (npm run build:web)');
  const engine = (await engines())[0] ?? 'pglite';
  const svc = await startService({ engine });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
  try {
    const events = await ingestDemo(svc.url, svc.adminKey);
    note(`${engine}: demo dataset of ${CUSTOMERS} customers, ${events} events, processed`);
    const context = await browser.newContext({ baseURL: svc.url, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto('/');
    const signIn = await page.evaluate(async (key) => {
      const r = await fetch('/tenant/session', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: key }),
      });
      return r.status;
    }, svc.adminKey);
    if (signIn !== 201) throw new Error(`sign-in answered ${signIn}`);
    // The service writes compressed copies of the build in the background after it starts.
    await sleep(3000);

    // First page, cold.
    const first = await context.newPage();
    const seen = await watch(first);
    let t0 = Date.now();
    await first.goto('/');
    await first.getByTestId('stat-profiles').waitFor();
    await first.locator('[data-testid=events-chart] svg').first().waitFor();
    const paint = Date.now() - t0;
    await first.waitForLoadState('networkidle');
    const traffic = seen();
    report({
      name: `console ${engine}: overview on screen (cold)`,
      value: paint,
      unit: 'ms',
      target: 'reported',
    });
    report({
      name: `console ${engine}: JavaScript of the first page (${traffic.scripts} scripts, compressed)`,
      value: traffic.scriptBytes / 1024,
      unit: 'KB',
      target: '≤ 300 KB',
      pass: traffic.scriptBytes <= JS_BUDGET,
    });

    // A profile's page until it is interactive.
    const profiles = (await (
      await fetch(`${svc.url}/tenant/profiles?limit=1`, { headers: { 'x-api-key': svc.adminKey } })
    ).json()) as { data: { id: string }[] };
    const id = profiles.data?.[0]?.id;
    if (id) {
      const p = await context.newPage();
      await watch(p);
      t0 = Date.now();
      await p.goto(`/profiles/${id}`);
      await p.locator('[data-testid=identity-graph] .react-flow__node').first().waitFor();
      await p.getByTestId('merge-button').waitFor();
      report({
        name: `console ${engine}: profile page interactive (cold)`,
        value: Date.now() - t0,
        unit: 'ms',
        target: 'reported',
      });
      await p.close();
    }

    // Requests per page view; a list request must carry a limit of at most 100.
    const pages = [
      '/',
      '/events',
      '/profiles',
      ...(id ? [`/profiles/${id}`] : []),
      '/segments',
      '/segments/new',
      '/accounts',
      '/orders',
      '/products',
      '/intelligence',
      '/activations/webhooks',
      '/dead-letters',
      '/settings/keys',
      '/settings',
    ];
    const unbounded: string[] = [];
    let most = 0;
    for (const path of pages) {
      const p = await context.newPage();
      const w = await watch(p);
      await p.goto(path);
      await p.waitForLoadState('networkidle');
      await sleep(300);
      const api = w().api.filter((u) => !u.startsWith('/assets/'));
      most = Math.max(most, api.length);
      const lists = api.filter((u) =>
        /^\/tenant\/(profiles|segments|orders|products|webhooks|apikeys|dead-letters)(\?|$)|\/(events|lineage|members|changes|deliveries)(\?|$)/.test(
          u,
        ),
      );
      for (const u of lists) {
        const limit = Number(new URL(u, svc.url).searchParams.get('limit') ?? '50');
        if (limit > 100) unbounded.push(u);
      }
      note(`${path}: ${api.length} API requests ${api.join(' ')}`);
      await p.close();
    }
    report({
      name: `console ${engine}: API requests of the busiest page view`,
      value: most,
      unit: 'requests',
      target: 'reported',
    });
    report({
      name: `console ${engine}: list requests asking for more than a page`,
      value: unbounded.length,
      unit: 'requests',
      target: '0',
      pass: unbounded.length === 0,
    });
  } finally {
    await browser.close();
    await svc.stop();
  }
}
