import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { killAllChildren } from '../child';
import { needs } from '../skips';
import {
  type ConsoleService,
  checkPage,
  hasChromium,
  launchBrowser,
  newContext,
  pageFetch,
  readableStorage,
  startConsoleService,
} from './browser';

/**
 * Signing in to the console, seen from a real browser (Debian's Chromium): the session cookie, what
 * the page can read, CSRF, read-only viewer sessions, sign-out and revocation. These use the API
 * from the page itself (same origin, the browser's cookie jar), so they hold whatever the pages look
 * like; console.browser.test.ts drives the pages.
 */
const gate = needs('chromium', hasChromium);

let browser: Browser;
let svc: ConsoleService;
beforeAll(async () => {
  if (!hasChromium) return;
  [browser, svc] = await Promise.all([launchBrowser(), startConsoleService()]);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  killAllChildren();
});

/** A fresh browser profile on the console, signed in with `key` through the page's own fetch. */
async function signedIn(key: string): Promise<{ context: BrowserContext; page: Page; csrf: string }> {
  const context = await newContext(browser, svc.url);
  const page = await context.newPage();
  await page.goto('/');
  const res = await pageFetch(page, '/tenant/session', { method: 'POST', body: { api_key: key } });
  expect(res.status).toBe(201);
  return { context, page, csrf: res.body.data.csrf_token };
}

gate.describe('console sign-in in a browser', () => {
  gate.it(
    'keeps the session in an HttpOnly, SameSite=Strict cookie and the key out of every storage the page reads',
    async () => {
      const { context, page } = await signedIn(svc.adminKey);
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'cdp_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', secure: false });
      const readable = await readableStorage(page);
      expect(readable).not.toContain(svc.adminKey);
      expect(readable).not.toContain(session!.value);
      expect(JSON.parse(readable).cookie).toBe('');
      // The session works for the API with nothing but the cookie.
      const me = await pageFetch(page, '/tenant/session');
      expect(me.status).toBe(200);
      expect(me.body.data.scopes).toEqual(['admin']);
      expect((await pageFetch(page, '/tenant/profiles')).status).toBe(200);
      await page.goto('/');
      await checkPage(page, 'home-signed-in');
      await context.close();
    },
  );

  gate.it('refuses a write without the CSRF token and accepts it with the token', async () => {
    const { context, page, csrf } = await signedIn(svc.adminKey);
    const body = { name: 'from the browser', scopes: ['viewer'] };
    const refused = await pageFetch(page, '/tenant/apikeys', { method: 'POST', body });
    expect(refused).toMatchObject({ status: 403, body: { error_code: 'CSRF_TOKEN_INVALID' } });
    const made = await pageFetch(page, '/tenant/apikeys', {
      method: 'POST',
      body,
      headers: { 'x-csrf-token': csrf },
    });
    expect(made.status).toBe(200);
    await context.close();
  });

  gate.it('gives a viewer key a read-only session', async () => {
    const viewer = (
      await svc.api('POST', '/tenant/apikeys', { body: { name: 'viewer', scopes: ['viewer'] } })
    ).body.data.api_key;
    const { context, page, csrf } = await signedIn(viewer);
    expect((await pageFetch(page, '/tenant/segments')).status).toBe(200);
    const write = await pageFetch(page, '/tenant/segments', {
      method: 'POST',
      body: { name: 'nope', query: { field: 'email', op: 'exists' } },
      headers: { 'x-csrf-token': csrf },
    });
    expect(write).toMatchObject({ status: 403, body: { error_code: 'INSUFFICIENT_SCOPE' } });
    await context.close();
  });

  gate.it('refuses an ingest-only key at sign-in with a clear message', async () => {
    const ingest = (
      await svc.api('POST', '/tenant/apikeys', { body: { name: 'ingest', scopes: ['ingest'] } })
    ).body.data.api_key;
    const context = await newContext(browser, svc.url);
    const page = await context.newPage();
    await page.goto('/');
    const res = await pageFetch(page, '/tenant/session', { method: 'POST', body: { api_key: ingest } });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('can only send events');
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });

  gate.it('ends the session on the server at sign-out', async () => {
    const { context, page, csrf } = await signedIn(svc.adminKey);
    const token = (await context.cookies()).find((c) => c.name === 'cdp_session')!.value;
    expect(
      (await pageFetch(page, '/tenant/session', { method: 'DELETE', headers: { 'x-csrf-token': csrf } }))
        .status,
    ).toBe(204);
    expect((await context.cookies()).filter((c) => c.name === 'cdp_session' && c.value !== '')).toEqual([]);
    expect((await pageFetch(page, '/tenant/session')).status).toBe(401);
    // The old cookie, replayed from elsewhere, is dead too.
    const replay = await fetch(`${svc.url}/tenant/profiles`, { headers: { cookie: `cdp_session=${token}` } });
    expect(replay.status).toBe(401);
    await context.close();
  });

  gate.it('ends the session when its key is revoked', async () => {
    const made = (
      await svc.api('POST', '/tenant/apikeys', { body: { name: 'revoked soon', scopes: ['editor'] } })
    ).body.data;
    const { context, page } = await signedIn(made.api_key);
    expect((await pageFetch(page, '/tenant/profiles')).status).toBe(200);
    expect((await svc.api('DELETE', `/tenant/apikeys/${made.id}`)).status).toBe(200);
    const after = await pageFetch(page, '/tenant/profiles');
    expect(after).toMatchObject({ status: 401, body: { error_code: 'INVALID_SESSION' } });
    await context.close();
  });
});
