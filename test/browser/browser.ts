import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { ROOT, request, serviceEnv, startService } from '../child';
import { dropSchema } from '../harness';
import { ENGINE } from '../skips';

/**
 * The browser tests' kit (docs/testing.md, "Browser tests"): Debian's Chromium driven by
 * playwright-core (never a downloaded browser), a screenshot of every page as an artifact, and
 * axe-core on every page.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const CONSOLE_DIST = join(ROOT, 'web', 'dist');
export const hasConsoleBuild = existsSync(join(CONSOLE_DIST, 'index.html'));

/** Where screenshots go: .test-results/screenshots/<engine>/<name>.png. */
export const SCREENSHOTS = join(ROOT, '.test-results', 'screenshots', ENGINE);

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

/** A fresh browser profile (no cookies, no storage) at the console's usual size. */
export async function newContext(browser: Browser, baseURL: string): Promise<BrowserContext> {
  // Reduced motion: the console then opens modals without a transition, so a screenshot or an
  // axe-core check never sees a dialog half faded in (its colours below contrast, mid-animation).
  return browser.newContext({ baseURL, viewport: { width: 1280, height: 800 }, reducedMotion: 'reduce' });
}

/** Saves a full-page screenshot of what the page shows now. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

let failures = 0;

/**
 * Waits for what a locator finds to be visible. When it never is, the failure says what the page
 * showed instead (its alerts, its loading states, its address) and leaves a screenshot, so a failure
 * on a CI machine can be read without running it again.
 */
export async function shown(locator: Locator, timeout = 30_000): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (err) {
    const page = locator.page();
    const alerts = await page
      .locator('[role="alert"], [aria-live="polite"]')
      .allInnerTexts()
      .catch(() => [] as string[]);
    const file = await screenshot(page, `failed-${++failures}`).catch(() => 'none');
    throw new Error(
      `${String(locator)} was not shown within ${timeout} ms at ${page.url()}; the page's alerts and ` +
        `loading states: ${JSON.stringify(alerts)}; screenshot: ${file}\n${(err as Error).message}`,
    );
  }
}

export interface Violation {
  page: string;
  id: string;
  impact: string | null | undefined;
  help: string;
  nodes: string[];
}

/** The serious and critical violations of axe-core's WCAG 2.1 A and AA rules on the page as it is now. */
export async function accessibilityViolations(page: Page, name: string): Promise<Violation[]> {
  const results = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      page: name,
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
    }));
}

/** Runs axe-core on the page: no serious or critical violation is allowed. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  expect(await accessibilityViolations(page, name), `axe-core on ${name}`).toEqual([]);
}

/** Screenshot and axe-core, for every page a test visits. */
export async function checkPage(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  await expectAccessible(page, name);
}

/**
 * Screenshot and axe-core for a walk through many pages: the violations are collected (in
 * `found`) so one run shows them all, and the caller asserts the list empty at the end.
 */
export async function surveyPage(page: Page, name: string, found: Violation[]): Promise<void> {
  await screenshot(page, name);
  found.push(...(await accessibilityViolations(page, name)));
}

/** What a page's script can read: its cookies, localStorage and sessionStorage, as one text. */
export async function readableStorage(page: Page): Promise<string> {
  // A string, evaluated in the page: the test code has no DOM types.
  return page.evaluate<string>(`(() => {
    const dump = (s) => Object.fromEntries(Array.from({ length: s.length }, (_, i) => [s.key(i), s.getItem(s.key(i))]));
    return JSON.stringify({ cookie: document.cookie, local: dump(localStorage), session: dump(sessionStorage) });
  })()`);
}

/** Runs fetch in the page (same origin, the browser's cookies): status, and the body parsed as JSON. */
export async function pageFetch(
  page: Page,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
): Promise<{ status: number; body: any }> {
  const arg = JSON.stringify({ path, init });
  return page.evaluate(`(async () => {
    const { path, init } = ${arg};
    const res = await fetch(path, {
      method: init.method ?? 'GET',
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.headers ?? {}) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { body = text; }
    return { status: res.status, body };
  })()`);
}

/** The real service (`cdp start`, a child process) for a browser to talk to, on its own database. */
export async function startConsoleService(extra: Record<string, string> = {}) {
  // A copy of the build, taken now: a rebuild of web/dist while the suite runs (`npm install`,
  // `npm run build:web` in another shell) empties the directory for seconds, and a page loaded then
  // would be a 404 instead of the console.
  const consoleDir = mkdtempSync(join(tmpdir(), 'cdp-console-build-'));
  cpSync(CONSOLE_DIST, consoleDir, { recursive: true });
  const env = serviceEnv({ CONSOLE_DIR: consoleDir, ...extra });
  const svc = await startService(env);
  const url = svc.url!;
  return {
    url,
    svc,
    adminKey: env.CDP_INITIAL_ADMIN_KEY!,
    /** A call with a key, from the test (not the browser). */
    api: (method: string, path: string, opts: { key?: string; body?: unknown } = {}) =>
      request(url, method, path, { key: opts.key ?? env.CDP_INITIAL_ADMIN_KEY!, body: opts.body }),
    async stop() {
      await svc.stop();
      if (env.DATABASE_URL && env.DATABASE_SCHEMA) await dropSchema(env.DATABASE_URL, env.DATABASE_SCHEMA);
      rmSync(consoleDir, { recursive: true, force: true });
    },
  };
}
export type ConsoleService = Awaited<ReturnType<typeof startConsoleService>>;
