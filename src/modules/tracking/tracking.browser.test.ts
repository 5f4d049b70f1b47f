import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { hasChromium, launchBrowser } from '../../../test/browser/browser';
import { startTestService, type TestService } from '../../../test/harness';
import { needs } from '../../../test/skips';
import { waitUntil } from '../../../test/wait';
import { readAccount } from '../accounts';
import { waitProcessed } from '../processing/processing.test-kit';

/**
 * The browser clients of Segment (@segment/analytics-next) and RudderStack (@rudderstack/analytics-js),
 * bundled from npm into a page served on 127.0.0.1 and driven in headless Chromium: configured only
 * with this service's address and a public key (allowed_domains: 127.0.0.1), they load their
 * settings from here, send here and nowhere else, and what they send becomes profiles. The same
 * page served from another host (localhost) is refused.
 */
/** What the page's script exposes. */
interface Win {
  run(cfg: Record<string, string>): void;
  done: Promise<unknown>;
}
const browserTests = needs('chromium', hasChromium);

/** The two pages' scripts: each exposes `run(cfg)`, which loads the library and makes the calls. */
const SEGMENT_ENTRY = `
import { AnalyticsBrowser } from '@segment/analytics-next';
window.run = (cfg) => {
  const analytics = AnalyticsBrowser.load({ writeKey: cfg.key, cdnURL: cfg.api });
  const delivered = async (p) => { const ctx = await p; return ctx.failedDelivery() ? String(ctx.failedDelivery().reason) : 'ok'; };
  window.done = (async () => {
    const results = [];
    results.push(await delivered(analytics.page('Pricing', { plan: 'team' })));
    results.push(await delivered(analytics.identify(cfg.user, { firstName: 'Ada', lastName: 'Lovelace', plan: 'pro' })));
    results.push(await delivered(analytics.track('Clicked Buy', { sku: 'mug-1' })));
    results.push(await delivered(analytics.group(cfg.group, { name: 'Acme', seats: 5 })));
    const [instance] = await analytics;
    return { results, anonymousId: instance.user().anonymousId() };
  })();
};`;

const RUDDER_ENTRY = `
import { RudderAnalytics } from '@rudderstack/analytics-js/bundled';
window.run = (cfg) => {
  const ra = new RudderAnalytics();
  ra.load(cfg.key, cfg.api, { configUrl: cfg.api, plugins: ['XhrQueue'], logLevel: 'ERROR' });
  window.done = new Promise((resolve) => ra.ready(() => {
    ra.page('Docs', 'Getting Started', { path: '/docs' });
    ra.identify(cfg.user, { firstName: 'Linus', email: cfg.email });
    ra.track('Trial Started', { days: 14 });
    ra.group(cfg.group, { name: 'Kernel' });
    resolve({ anonymousId: ra.getAnonymousId() });
  }));
};`;

let svc: TestService;
let api: string;
let publicKey: string;
let browser: Browser;
let site: http.Server;
let sitePort: number;
const scripts = new Map<string, string>();

async function bundle(entry: string): Promise<string> {
  const out = await build({
    stdin: { contents: entry, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome110',
    write: false,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return out.outputFiles[0]!.text;
}

browserTests.describe('the browser libraries in Chromium', () => {
  beforeAll(async () => {
    svc = await startTestService();
    await svc.app.listen({ port: 0, host: '127.0.0.1' });
    api = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
    // Through the API, as a user would: the key's domains answer preflights from then on.
    const created = await svc.call('POST', '/tenant/apikeys', {
      body: { name: 'website', scopes: ['ingest'], allowed_domains: ['127.0.0.1'] },
    });
    publicKey = created.body.data.api_key;
    const [segment, rudder] = await Promise.all([bundle(SEGMENT_ENTRY), bundle(RUDDER_ENTRY)]);
    scripts.set('/segment.js', segment);
    scripts.set('/rudder.js', rudder);
    site = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const js = scripts.get(path);
      if (js !== undefined) {
        res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
        return;
      }
      const lib = path.slice(1) || 'segment';
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!doctype html><title>${lib}</title><script src="/${lib}.js"></script>`);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    sitePort = (site.address() as AddressInfo).port;
    browser = await launchBrowser();
    // Bundling both libraries and starting Chromium take ≈ 10 s alone, several times that on two
    // cores shared with the rest of the suite.
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await svc?.close();
  });

  /** A page on `host`; every request it makes is recorded, and any to another machine is refused. */
  async function open(host: '127.0.0.1' | 'localhost', lib: 'segment' | 'rudder') {
    const context = await browser.newContext();
    const page: Page = await context.newPage();
    const requests: string[] = [];
    const elsewhere: string[] = [];
    /** Requests the browser gave up on: a CORS refusal (the preflight answered 403) is one. */
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      requests.push(`${route.request().method()} ${url.pathname}`);
      if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
        elsewhere.push(url.href);
        await route.abort();
      } else await route.continue();
    });
    await page.goto(`http://${host}:${sitePort}/${lib}`);
    await page.waitForFunction(() => typeof (globalThis as unknown as { run?: unknown }).run === 'function');
    /** Starts the library and its calls; `done` is what they came to (resolves once they are sent). */
    const start = (cfg: Record<string, string>) =>
      page.evaluate((c) => (globalThis as never as Win).run(c), cfg);
    const done = () => page.evaluate(() => (globalThis as never as Win).done);
    return { page, context, requests, elsewhere, failed, start, done };
  }

  // biome-ignore lint/suspicious/noExplicitAny: profiles are inspected field by field
  async function profileOf(identity: string): Promise<any> {
    const list = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`);
    const id = list.body.data[0]?.id;
    return id ? (await svc.call('GET', `/tenant/profiles/${id}`)).body.data : null;
  }

  const countEvents = async (identity: string): Promise<number> => {
    const { rows } = await svc.rt.deps.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND (identity = $2 OR anonymous_id = $3)',
      [svc.ws.id, identity, identity],
    );
    return rows[0]!.n;
  };

  browserTests.it(
    '@segment/analytics-next loads its settings here and its calls become a profile and an account',
    async () => {
      const user = `ada-${randomUUID()}`;
      const group = `acme-${randomUUID()}`;
      const { context, requests, elsewhere, start, done } = await open('127.0.0.1', 'segment');
      try {
        await start({ key: publicKey, api, user, group });
        const { results, anonymousId } = (await done()) as { results: string[]; anonymousId: string };
        expect(results).toEqual(['ok', 'ok', 'ok', 'ok']);
        expect(requests).toEqual(
          expect.arrayContaining([`GET /v1/projects/${publicKey}/settings`, 'POST /v1/t']),
        );
        expect(elsewhere).toEqual([]);

        await waitProcessed(svc.rt.deps.db);
        const p = await profileOf(user);
        expect(p).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace', attributes: { plan: 'pro' } });
        // The page view before identify was anonymous: it is the same person now.
        expect(p.identities).toEqual(expect.arrayContaining([{ type: 'anonymous_id', value: anonymousId }]));
        expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({
          name: 'Acme',
          seats: 5,
        });
      } finally {
        await context.close();
      }
    },
    60_000,
  );

  browserTests.it(
    '@rudderstack/analytics-js loads its sourceConfig here and its calls become a profile and an account',
    async () => {
      const user = `linus-${randomUUID()}`;
      const email = `${user}@example.com`;
      const group = `kernel-${randomUUID()}`;
      const { context, requests, elsewhere, start, done } = await open('127.0.0.1', 'rudder');
      try {
        await start({ key: publicKey, api, user, email, group });
        const { anonymousId } = (await done()) as { anonymousId: string };
        await waitUntil(async () => (await countEvents(user)) >= 3, {
          what: "RudderStack's calls to be stored",
          detail: () => requests,
        });
        expect(requests).toEqual(expect.arrayContaining(['GET /sourceConfig/']));
        expect(elsewhere).toEqual([]);

        await waitUntil(async () => readAccount(svc.rt.deps.db, svc.ws.id, group), {
          what: 'the group call',
        });
        await waitProcessed(svc.rt.deps.db);
        const p = await profileOf(user);
        expect(p).toMatchObject({ email, first_name: 'Linus' });
        expect(p.identities).toEqual(expect.arrayContaining([{ type: 'anonymous_id', value: anonymousId }]));
        expect((await readAccount(svc.rt.deps.db, svc.ws.id, group))?.traits).toEqual({ name: 'Kernel' });
      } finally {
        await context.close();
      }
    },
    60_000,
  );

  browserTests.it(
    'refuses both libraries on a page of another origin (the key allows 127.0.0.1 only)',
    async () => {
      const user = `mallory-${randomUUID()}`;
      // What each library's first call to the key-checked API is: refused by its preflight.
      const refusedCall = { segment: 'POST /v1/p', rudder: 'GET /sourceConfig/' } as const;
      for (const lib of ['segment', 'rudder'] as const) {
        const { context, failed, start } = await open('localhost', lib);
        try {
          await start({ key: publicKey, api, user, email: `${user}@example.com`, group: `g-${user}` });
          await waitUntil(() => failed.includes(refusedCall[lib]), {
            what: `the browser to refuse ${refusedCall[lib]} from http://localhost`,
            detail: () => failed,
          });
        } finally {
          await context.close();
        }
      }
      expect(await countEvents(user)).toBe(0);
    },
    60_000,
  );
});
