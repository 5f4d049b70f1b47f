import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { killAllChildren } from '../child';
import { needs } from '../skips';
import { waitUntil } from '../wait';
import {
  type ConsoleService,
  hasChromium,
  hasConsoleBuild,
  launchBrowser,
  newContext,
  readableStorage,
  SCREENSHOTS,
  shown,
  startConsoleService,
  surveyPage,
  type Violation,
} from './browser';

/**
 * The console's pages in a real browser, driven through their `data-testid` hooks
 * (docs/console.md, "Test hooks"): the list of what a person must be able to do. Every page
 * visited is screenshotted and checked by axe-core.
 */
const gate = needs('chromium', hasChromium).and(needs('the web console build', hasConsoleBuild));

let browser: Browser;
let svc: ConsoleService;
/** A local webhook receiver: what it was sent. */
const received: Array<{ path: string; body: string }> = [];
let receiver: Server;
let receiverUrl: string;

beforeAll(async () => {
  if (!hasChromium || !hasConsoleBuild) return;
  receiver = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      body += d;
    });
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  [browser, svc] = await Promise.all([
    launchBrowser(),
    startConsoleService({ CDP_ALLOW_PRIVATE_WEBHOOKS: '1' }),
  ]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  receiver?.close();
  killAllChildren();
});

/** Every page visited: screenshotted, and its accessibility violations kept for the last test. */
const violations: Violation[] = [];
const check = (page: Page, name: string) => surveyPage(page, name, violations);

const byTestId = (page: Page, id: string) => page.getByTestId(id);

/** A fresh browser profile, signed in through the sign-in page's form. */
async function signIn(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await newContext(browser, svc.url);
  const page = await context.newPage();
  await page.goto('/');
  await byTestId(page, 'signin-key').fill(key);
  await byTestId(page, 'signin-submit').click();
  await shown(byTestId(page, 'signout'));
  return { context, page };
}

async function api(method: string, path: string, body?: unknown, key?: string) {
  return svc.api(method, path, { body, ...(key ? { key } : {}) });
}

gate.describe('the console in a browser', () => {
  gate.it('signs in through the form, keeps the key out of the page, and shows the overview', async () => {
    const context = await newContext(browser, svc.url);
    const page = await context.newPage();
    await page.goto('/');
    await shown(byTestId(page, 'signin-form'));
    await check(page, 'sign-in');
    // A wrong key is refused in words.
    await byTestId(page, 'signin-key').fill(`cdp_sk_${'x'.repeat(43)}`);
    await byTestId(page, 'signin-submit').click();
    await shown(byTestId(page, 'signin-error'));
    await check(page, 'sign-in-refused');

    await byTestId(page, 'signin-key').fill(svc.adminKey);
    await byTestId(page, 'signin-submit').click();
    await shown(byTestId(page, 'signout'));
    await shown(byTestId(page, 'events-chart'));
    expect(await byTestId(page, 'session-access').textContent()).toMatch(/admin/i);
    const cookie = (await context.cookies()).find((c) => c.name === 'cdp_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    const readable = await readableStorage(page);
    expect(readable).not.toContain(svc.adminKey);
    expect(readable).not.toContain(cookie!.value);
    await check(page, 'overview');

    // Sign-out ends the session: the sign-in page again, and the old cookie is refused.
    await byTestId(page, 'signout').click();
    await shown(byTestId(page, 'signin-form'));
    const replay = await fetch(`${svc.url}/tenant/session`, {
      headers: { cookie: `cdp_session=${cookie!.value}` },
    });
    expect(replay.status).toBe(401);
    await context.close();
  });

  gate.it(
    'creates a key and shows its secret exactly once; a revoked key is refused at sign-in',
    async () => {
      const { context, page } = await signIn(svc.adminKey);
      await page.goto('/settings/keys');
      await shown(byTestId(page, 'keys-table'));
      await check(page, 'api-keys');
      await byTestId(page, 'key-create').click();
      await byTestId(page, 'key-name').fill('made in the browser');
      await byTestId(page, 'key-scope-viewer').check();
      await check(page, 'api-keys-create');
      await byTestId(page, 'key-create-submit').click();
      const secret = ((await byTestId(page, 'key-secret').textContent()) ?? '').trim();
      expect(secret).toMatch(/^cdp_sk_[A-Za-z0-9_-]{43}$/);
      await check(page, 'api-keys-secret');
      await byTestId(page, 'key-secret-done').click();
      await byTestId(page, 'key-secret').waitFor({ state: 'detached' });
      expect(await page.content()).not.toContain(secret);
      await page.reload();
      await shown(byTestId(page, 'keys-table'));
      expect(await page.content()).not.toContain(secret);
      expect(await readableStorage(page)).not.toContain(secret);

      // The key works, until it is revoked from the page.
      const listed = (await api('GET', '/tenant/apikeys?limit=100')).body.data as Array<{
        id: string;
        name: string;
      }>;
      const id = listed.find((k) => k.name === 'made in the browser')!.id;
      expect((await api('GET', '/tenant/profiles', undefined, secret)).status).toBe(200);
      await byTestId(page, `key-revoke-${id}`).click();
      await check(page, 'api-keys-revoke');
      await byTestId(page, 'key-revoke-confirm').click();
      await byTestId(page, `key-row-${id}`).waitFor({ state: 'detached' });
      expect((await api('GET', '/tenant/profiles', undefined, secret)).status).toBe(401);

      const other = await newContext(browser, svc.url);
      const refused = await other.newPage();
      await refused.goto('/');
      await byTestId(refused, 'signin-key').fill(secret);
      await byTestId(refused, 'signin-submit').click();
      await shown(byTestId(refused, 'signin-error'));
      expect(await other.cookies()).toEqual([]);
      await other.close();
      await context.close();
    },
  );

  gate.it('creates a webhook to a local receiver and shows the delivery in its log', async () => {
    const { context, page } = await signIn(svc.adminKey);
    await page.goto('/activations/webhooks');
    await byTestId(page, 'webhook-create').click();
    await byTestId(page, 'webhook-url').fill(receiverUrl);
    await byTestId(page, 'webhook-event-profile.created').check();
    // A consent category the profile makes no choice about: the workspace default (granted) lets it through.
    await byTestId(page, 'webhook-consent').fill('analytics');
    await byTestId(page, 'webhook-consent').press('Enter');
    await check(page, 'webhooks-create');
    await byTestId(page, 'webhook-save').click();
    await shown(byTestId(page, 'webhooks-table'));
    const hooks = (await api('GET', '/tenant/webhooks')).body.data as Array<{
      id: string;
      url: string;
      consent_categories: string[];
    }>;
    const hook = hooks.find((h) => h.url === receiverUrl)!;
    expect(hook.consent_categories).toEqual(['analytics']);

    // A new profile: the receiver gets profile.created, and the page's log shows it delivered.
    expect(
      (
        await api('POST', '/api/ingest', {
          event_type: 'identify',
          event_name: 'Signed Up',
          identity: 'hook@example.com',
        })
      ).status,
    ).toBe(202);
    await waitUntil(
      () => received.some((r) => r.body.includes('hook@example.com') || r.body.includes('profile.created')),
      {
        what: 'the receiver to get profile.created',
        timeoutMs: 30_000,
      },
    );
    await byTestId(page, `webhook-open-${hook.id}`).click();
    await shown(byTestId(page, 'webhook-detail'));
    await byTestId(page, 'tab-deliveries').click();
    await waitUntil(
      async () => {
        const statuses = await byTestId(page, 'delivery-status').allInnerTexts();
        if (statuses.some((s) => /delivered/i.test(s))) return true;
        await page.reload();
        await byTestId(page, `webhook-open-${hook.id}`).click();
        await byTestId(page, 'tab-deliveries').click();
        return false;
      },
      { what: 'the delivery log to show a delivered delivery', timeoutMs: 30_000, intervalMs: 500 },
    );
    await check(page, 'webhooks-deliveries');
    await context.close();
  });

  gate.it('builds a segment whose live count equals the API’s', async () => {
    await api(
      'POST',
      '/tenant/ingest/batch',
      Array.from({ length: 6 }, (_, i) => ({
        event_type: 'identify',
        event_name: 'Identified',
        identity: `seg-${i}@example.com`,
        payload: { plan: i % 2 === 0 ? 'pro' : 'free' },
      })),
    );
    const query = { attribute: 'plan', op: 'eq', value: 'pro' };
    await waitUntil(
      async () => (await api('POST', '/tenant/segments/calculate', { query })).body?.data?.count >= 3,
      { what: 'the profiles to be processed', timeoutMs: 30_000 },
    );
    const expected = (await api('POST', '/tenant/segments/calculate', { query })).body.data.count as number;

    const { context, page } = await signIn(svc.adminKey);
    await page.goto('/segments/new');
    await byTestId(page, 'segment-name').fill('Pro plan');
    await byTestId(page, 'tab-json').click();
    await byTestId(page, 'segment-json').fill(JSON.stringify(query));
    await byTestId(page, 'segment-json-apply').click();
    await byTestId(page, 'tab-builder').click();
    await waitUntil(
      async () => ((await byTestId(page, 'preview-count').textContent()) ?? '').trim() === String(expected),
      {
        what: `the live count to show ${expected}`,
        timeoutMs: 20_000,
        intervalMs: 200,
      },
    );
    await check(page, 'segment-builder');
    // The save must be answered before the test navigates away, which would cancel it.
    const saved = page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/tenant/segments',
    );
    await byTestId(page, 'segment-save').click();
    expect((await saved).ok()).toBe(true);
    await page.goto('/segments');
    await shown(byTestId(page, 'segments-table'));
    await shown(page.getByText('Pro plan').first());
    await check(page, 'segments');
    await context.close();
  });

  gate.it('opens a profile, draws its identity graph, and merges another into it', async () => {
    await api('POST', '/tenant/ingest/batch', [
      { event_type: 'page', event_name: 'Home', anonymous_id: '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0' },
      {
        event_type: 'identify',
        event_name: 'Signed Up',
        anonymous_id: '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0',
        identity: 'graph@example.com',
      },
      { event_type: 'identify', event_name: 'Signed Up', identity: 'other-graph@example.com' },
    ]);
    const find = async (email: string) =>
      (await api('GET', `/tenant/profiles?email=${encodeURIComponent(email)}`)).body?.data?.[0]?.id as
        | string
        | undefined;
    const [main, other] = await waitUntil(
      async () => {
        const a = await find('graph@example.com');
        const b = await find('other-graph@example.com');
        return a && b ? [a, b] : null;
      },
      { what: 'both profiles', timeoutMs: 30_000 },
    );
    const { context, page } = await signIn(svc.adminKey);
    await page.goto('/profiles');
    await shown(byTestId(page, 'profiles-table'));
    await check(page, 'profiles');
    await page.goto(`/profiles/${main}`);
    await shown(byTestId(page, 'profile-name'));
    // No choice was ever recorded: the card says the workspace default applies.
    await shown(byTestId(page, 'consent-empty'));
    await check(page, 'profile');
    await byTestId(page, 'tab-graph').click();
    const graph = byTestId(page, 'identity-graph');
    await shown(graph);
    expect(await graph.getAttribute('aria-label')).toMatch(/[1-9]\d* identifiers/);
    await check(page, 'profile-graph');

    await byTestId(page, 'merge-button').click();
    await byTestId(page, 'merge-ids').fill(other);
    await byTestId(page, 'merge-ids').press('Enter');
    await byTestId(page, 'merge-preview').click();
    await shown(byTestId(page, 'merge-preview-result'));
    await check(page, 'profile-merge-preview');
    await byTestId(page, 'merge-confirm').click();
    await waitUntil(
      async () => {
        const res = await api('GET', `/tenant/profiles/${other}`);
        return res.status === 200 && res.body.data.id === main;
      },
      { what: 'the merged profile to read as the survivor', timeoutMs: 20_000 },
    );
    await context.close();
  });

  gate.it(
    'shows a profile’s consent, denies a category from the page, and the API reads it denied',
    async () => {
      const sent = await api('POST', '/api/ingest', {
        event_type: 'identify',
        event_name: 'Consented',
        identity: 'consent@example.com',
        consent: { categories: { analytics: true, ads: true } },
      });
      expect(sent.status).toBe(202);
      const id = await waitUntil(
        async () => {
          const found = (await api('GET', '/tenant/profiles?email=consent%40example.com')).body?.data?.[0]
            ?.id;
          if (!found) return null;
          const read = await api('GET', `/tenant/profiles/${found}`);
          return read.body?.data?.consent?.categories?.ads ? (found as string) : null;
        },
        { what: 'the event’s consent to be recorded on its profile', timeoutMs: 30_000 },
      );

      const { context, page } = await signIn(svc.adminKey);
      await page.goto(`/profiles/${id}`);
      const ads = byTestId(page, 'consent-row-ads');
      await shown(ads);
      expect(await ads.getByTestId('consent-state').textContent()).toBe('Granted');
      expect(await ads.textContent()).toContain('event');
      await check(page, 'profile-consent');

      await ads.getByTestId('consent-toggle').click();
      await waitUntil(async () => (await ads.getByTestId('consent-state').textContent()) === 'Denied', {
        what: 'the page to show ads denied',
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      const categories = (await api('GET', `/tenant/profiles/${id}`)).body.data.consent.categories;
      expect(categories.ads).toMatchObject({ granted: false, source_type: 'api_key' });
      expect(categories.analytics.granted).toBe(true);
      // The page names the key that denied it, as the API does.
      await waitUntil(async () => ((await ads.textContent()) ?? '').includes(categories.ads.source_id), {
        what: 'the page to name the key that denied ads',
      });
      // A category the profile never chose about, recorded from the form (granted, the form's default).
      await byTestId(page, 'consent-new-category').fill('email');
      await byTestId(page, 'consent-add').click();
      await shown(byTestId(page, 'consent-row-email'));
      expect(await byTestId(page, 'consent-row-email').getByTestId('consent-state').textContent()).toBe(
        'Granted',
      );
      expect((await api('GET', `/tenant/profiles/${id}`)).body.data.consent.categories.email.granted).toBe(
        true,
      );
      await context.close();
    },
  );

  gate.it('shows a change made in the console on the audit log page, with its request id', async () => {
    const { context, page } = await signIn(svc.adminKey);
    await page.goto('/settings/keys');
    await shown(byTestId(page, 'keys-table'));
    await byTestId(page, 'key-create').click();
    await byTestId(page, 'key-name').fill('audited in the browser');
    const created = page.waitForResponse(
      (r) => r.url().endsWith('/tenant/apikeys') && r.request().method() === 'POST',
    );
    await byTestId(page, 'key-create-submit').click();
    const answer = await created;
    const requestId = answer.headers()['x-request-id']!;
    const keyId = ((await answer.json()) as { data: { id: string } }).data.id;
    await byTestId(page, 'key-secret-done').click();

    await byTestId(page, 'nav-audit-log').click();
    await shown(byTestId(page, 'audit-table'));
    const entries = (await api('GET', '/tenant/audit-log?action=apikey.create')).body.data as Array<{
      id: string;
      request_id: string;
      target: { id: string };
    }>;
    const entry = entries.find((e) => e.request_id === requestId)!;
    expect(entry.target.id).toBe(keyId);
    const row = byTestId(page, `audit-row-${entry.id}`);
    await shown(row);
    const text = (await row.textContent()) ?? '';
    for (const part of ['apikey.create', 'api_key', keyId, requestId, '127.0.0.1', 'console', '200']) {
      expect(text).toContain(part);
    }
    // The pointer off the link it clicked: a hovered control's colours are not the page's.
    await page.getByRole('heading', { name: 'Audit log' }).hover();
    await check(page, 'audit-log');

    // Filtered by the action, its entry is still there; by another action, it is not.
    await byTestId(page, 'audit-filter-action').fill('session.create');
    await row.waitFor({ state: 'detached' });
    await byTestId(page, 'audit-filter-action').fill('apikey.create');
    await shown(row);
    await row.getByRole('button', { name: /Details/ }).click();
    await page.getByRole('heading', { name: 'Audit log' }).hover();
    await check(page, 'audit-log-details');
    await context.close();
  });

  gate.it('gives a viewer key a read-only console: no write action is offered', async () => {
    const viewer = (
      await api('POST', '/tenant/apikeys', { name: 'viewer in the browser', scopes: ['viewer'] })
    ).body.data.api_key as string;
    const { context, page } = await signIn(viewer);
    expect(await byTestId(page, 'session-access').textContent()).toMatch(/read-only/i);
    // Admin pages are not in the navigation; write buttons are absent or disabled.
    expect(await byTestId(page, 'nav-keys').count()).toBe(0);
    expect(await byTestId(page, 'nav-webhooks').count()).toBe(0);
    expect(await byTestId(page, 'nav-audit-log').count()).toBe(0);
    await page.goto('/segments');
    await shown(byTestId(page, 'segments-table').or(byTestId(page, 'empty-state')).first());
    const newSegment = byTestId(page, 'segment-new');
    expect((await newSegment.count()) === 0 || (await newSegment.isDisabled())).toBe(true);
    await check(page, 'viewer-segments');
    // A write the page does not offer is refused by the API as well (with the session's CSRF token).
    const csrf = (await (await page.request.get('/tenant/session')).json()).data.csrf_token;
    const write = await page.request.post('/tenant/segments', {
      data: { name: 'nope', query: { field: 'email', op: 'exists' } },
      headers: { 'x-csrf-token': csrf },
    });
    expect(write.status()).toBe(403);
    // The Intelligence page's grid and histograms are one read a viewer may make; no fit is offered.
    await page.goto('/intelligence');
    await shown(byTestId(page, 'rfm-table'));
    await shown(byTestId(page, 'backtests-table').or(byTestId(page, 'empty-state')).first());
    expect(await byTestId(page, 'fit-now').count()).toBe(0);
    await context.close();
  });

  gate.it('lists an account a group call named, with its member, and shows it on that profile', async () => {
    const sent = await api('POST', '/v1/group', {
      userId: 'account-member@example.com',
      groupId: 'acme-in-the-browser',
      traits: { name: 'Acme in the browser', plan: 'enterprise' },
    });
    expect(sent.status).toBe(200);
    await waitUntil(
      async () => (await api('GET', '/tenant/accounts/acme-in-the-browser')).body?.data?.member_count === 1,
      { what: 'the group call to be processed into a membership', timeoutMs: 30_000 },
    );

    const { context, page } = await signIn(svc.adminKey);
    await page.goto('/accounts');
    await shown(byTestId(page, 'accounts-table'));
    await page.getByRole('link', { name: 'acme-in-the-browser' }).click();
    await shown(byTestId(page, 'account-members'));
    expect(await byTestId(page, 'account-name').textContent()).toBe('Acme in the browser');
    expect(await byTestId(page, 'account-traits').textContent()).toContain('enterprise');
    await check(page, 'account');
    // Its member's profile names the account in turn.
    await byTestId(page, 'account-members').getByRole('link').first().click();
    await shown(byTestId(page, 'profile-accounts'));
    expect(await byTestId(page, 'profile-accounts').textContent()).toContain('Acme in the browser');
    await context.close();
  });

  /**
   * Every page of the navigation, one test each: a page that does not show names itself, and each
   * page has the whole test budget (on a loaded CI machine twelve pages in one test did not fit).
   */
  gate.describe('every page of the navigation, surveyed with axe-core', () => {
    let session: { context: BrowserContext; page: Page };
    beforeAll(async () => {
      session = await signIn(svc.adminKey);
    });
    afterAll(async () => {
      await session?.context.close();
    });
    const pages: Array<[string, string]> = [
      ['/', 'events-chart'],
      ['/events', 'stream-status'],
      ['/profiles', 'profiles-table'],
      ['/segments', 'segments-table'],
      ['/accounts', 'accounts-table'],
      ['/orders', 'orders-table'],
      ['/products', 'products-table'],
      ['/intelligence', 'fit-now'],
      ['/activations/webhooks', 'webhooks-table'],
      ['/dead-letters', 'dead-letters-table'],
      ['/settings/keys', 'keys-table'],
      ['/audit-log', 'audit-table'],
      ['/settings', 'settings-save'],
    ];
    for (const [path, ready] of pages) {
      gate.it(`shows ${path} and surveys it`, async () => {
        const { page } = session;
        await page.goto(path);
        await shown(byTestId(page, ready).or(byTestId(page, 'empty-state')).first());
        await check(page, `page${path === '/' ? '-overview' : path.replaceAll('/', '-')}`);
      });
    }
    // A narrow window: the same pages stay usable (the navigation folds away).
    gate.it('shows the overview in a narrow window', async () => {
      const { page } = session;
      await page.setViewportSize({ width: 420, height: 800 });
      await page.goto('/');
      await shown(byTestId(page, 'events-chart'));
      await check(page, 'overview-narrow');
    });
  });

  gate.it('finds no serious or critical accessibility violation (axe-core) on any page visited', () => {
    writeFileSync(join(SCREENSHOTS, 'axe-violations.json'), `${JSON.stringify(violations, null, 2)}\n`);
    expect(violations).toEqual([]);
  });
});
