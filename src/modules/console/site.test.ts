import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { API_PREFIXES } from './site';

/** A stand-in for the web build: an index page, a hashed script large enough to compress, an icon. */
const dist = mkdtempSync(join(tmpdir(), 'cdp-console-'));
const SCRIPT = `console.log(${JSON.stringify('the console '.repeat(400))});\n`;
mkdirSync(join(dist, 'assets'));
writeFileSync(
  join(dist, 'index.html'),
  '<!doctype html><html><body><div id="root">console page</div></body></html>',
);
writeFileSync(join(dist, 'assets', 'index-3f2a9c1b.js'), SCRIPT);
writeFileSync(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');

let svc: TestService;
let unbuilt: TestService;
beforeAll(async () => {
  svc = await startTestService({ CONSOLE_DIR: dist });
  unbuilt = await startTestService({ CONSOLE_DIR: join(dist, 'nowhere') });
});
afterAll(async () => {
  await svc?.close();
  await unbuilt?.close();
  rmSync(dist, { recursive: true, force: true });
});

const html = { key: null, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } };

describe('the console site', () => {
  it('serves the app at / with no-cache and a content security policy', async () => {
    const res = await svc.call('GET', '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.text).toContain('console page');
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it.each([
    '/profiles/0b7c9a8e-0000-4000-8000-000000000001',
    '/segments/seg_1',
    '/activations/webhooks',
    '/overview',
    '/intelligence',
  ])('answers the deep link %s with the app, for the browser to route', async (path) => {
    const res = await svc.call('GET', path, html);
    expect(res.status).toBe(200);
    expect(res.text).toContain('console page');
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it.each(
    API_PREFIXES.filter((p) => p !== '/docs' && p !== '/openapi.json' && p !== '/health' && p !== '/ready'),
  )(
    'never shadows the API: an unknown path under %s stays a JSON 404, even for a browser',
    async (prefix) => {
      expectError(await svc.call('GET', `${prefix}/no-such-thing`, html), 404, 'NOT_FOUND');
    },
  );

  it('keeps the API’s own pages where they were', async () => {
    expect((await svc.call('GET', '/health', html)).headers['content-type']).toMatch(/json/);
    expect((await svc.call('GET', '/openapi.json', html)).body.openapi).toBe('3.1.0');
  });

  it('answers a deep link asked for as JSON, or with another method, with the JSON 404', async () => {
    expectError(
      await svc.call('GET', '/profiles/x', { key: null, headers: { accept: 'application/json' } }),
      404,
      'NOT_FOUND',
    );
    expectError(await svc.call('POST', '/profiles/x', { ...html, body: {} }), 404, 'NOT_FOUND');
  });

  it('serves hashed assets as immutable, compressed for browsers that accept it', async () => {
    const plain = await svc.call('GET', '/assets/index-3f2a9c1b.js', { key: null });
    expect(plain.status).toBe(200);
    expect(plain.text).toBe(SCRIPT);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-type']).toMatch(/javascript/);

    // The compressed copies are written in the background after the start.
    const br = await waitForCompressed();
    expect(br.rawPayload.length).toBeLessThan(SCRIPT.length / 4);
    expect(br.headers.vary).toMatch(/accept-encoding/i);
  });

  it('serves other files of the build, revalidated', async () => {
    const res = await svc.call('GET', '/favicon.svg', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it('answers a missing hashed asset with a 404, not with the page', async () => {
    expectError(await svc.call('GET', '/assets/index-00000000.js', html), 404, 'NOT_FOUND');
  });

  it('says how to build the console when it is not built', async () => {
    const res = await unbuilt.call('GET', '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.text).toContain('The console is not built');
    expect(res.text).toContain('npm install');
    const deep = await unbuilt.call('GET', '/profiles/1', html);
    expect(deep.status).toBe(404);
    expect(deep.text).toContain('not built');
    expectError(await unbuilt.call('GET', '/tenant/nothing', html), 404, 'NOT_FOUND');
  });
});

function waitForCompressed() {
  return waitUntil(
    async () => {
      const r = await svc.app.inject({
        method: 'GET',
        url: '/assets/index-3f2a9c1b.js',
        headers: { 'accept-encoding': 'br' },
      });
      return r.headers['content-encoding'] === 'br' && r;
    },
    { what: 'the compressed copy of the script' },
  );
}
