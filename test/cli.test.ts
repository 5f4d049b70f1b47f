import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadMigrations } from '../src/platform/db/migrate';
import { killAllChildren, request, runCli, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema, ENGINE } from './harness';
import { waitUntil } from './wait';

// Each test spawns whole services (seconds each on a busy 2-core machine): allow for it.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * The `cdp` command as a user runs it: a real child process on a database of its own (a temporary
 * DATA_DIR on PGlite, a fresh schema on PostgreSQL).
 */
const dirs: string[] = [];
const schemas: string[] = [];
const services: ServiceProcess[] = [];

/** An empty database and nothing else: no fixed admin key unless the test sets one. */
function emptyDbEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = serviceEnv(extra);
  if (!('CDP_INITIAL_ADMIN_KEY' in extra)) delete env.CDP_INITIAL_ADMIN_KEY;
  if (env.DATABASE_URL) schemas.push(env.DATABASE_SCHEMA!);
  else {
    const dir = mkdtempSync(join(tmpdir(), 'cdp-cli-'));
    dirs.push(dir);
    env.DATA_DIR = join(dir, 'data');
  }
  return env;
}

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const svc = await startService(env);
  services.push(svc);
  return svc;
}

afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
  killAllChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const s of schemas) await dropSchema(process.env.DATABASE_URL!, s);
});

const ADMIN_KEY_LINE = /Admin API key \(shown only now, store it safely\):\s+(cdp_sk_[A-Za-z0-9_-]{43,})/;

function expectUsageError(res: { code: number | null; stderr: string; stdout: string }, text: RegExp) {
  expect(res.code).toBe(2);
  const lines = res.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cdp: /);
  expect(lines[0]).toMatch(text);
  expect(res.stderr).not.toMatch(/\n\s+at /);
}

describe('cdp without a database', () => {
  const env = { LOG_LEVEL: 'info', DATA_DIR: ':memory:' };

  it.each([['--help'], ['-h'], ['help']])('prints its usage for `cdp %s` and exits 0', async (arg) => {
    const res = await runCli([arg], env);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('usage: cdp <command>');
    for (const cmd of ['start', 'migrate', 'workspace create NAME', 'key create --workspace ID']) {
      expect(res.stdout).toContain(cmd);
    }
  });

  it('prints its own usage, not npm’s, for `npx cdp --help` as the README says to run it', () => {
    const res = spawnSync('npx', ['--no-install', 'cdp', '--help'], {
      cwd: join(import.meta.dirname, '..'),
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('usage: cdp <command>');
  });

  const label = (args: string[]) =>
    ['cdp', ...args.map((a) => (a.length > 30 ? `<${a.length} characters>` : a.trim() ? a : `'${a}'`))].join(
      ' ',
    );
  it.each(
    (
      [
        [[], /no command given/],
        [['frobnicate'], /unknown command "frobnicate"/],
        [['--bogus'], /Unknown option '--bogus'/],
        [['workspace', 'create'], /usage: cdp workspace create NAME/],
        [['workspace', 'create', '   '], /invalid workspace name: must not be blank/],
        [['workspace', 'create', 'x'.repeat(201)], /invalid workspace name: .*200/],
        [['key', 'create'], /key create needs --workspace ID/],
        [['key', 'create', '--workspace', 'w'], /key create needs --scopes/],
        [['key', 'create', '--workspace', 'w', '--scopes', 'viewer,root'], /unknown scope\(s\): root/],
        [['key', 'create', '--workspace', 'w', '--scopes', ''], /key create needs --scopes/],
        [
          [
            'key',
            'create',
            '--workspace',
            'w',
            '--scopes',
            'viewer',
            '--domains',
            'https://shop.example.com/',
          ],
          /allowed_domains\/0: "https:\/\/shop.example.com\/" is not a host name/,
        ],
        [
          ['settings', 'set', 'colour=blue', 'churn_threshold=1'],
          /colour is not a setting; churn_threshold must be < 1/,
        ],
        [['settings', 'set'], /usage: cdp settings set KEY=VALUE/],
      ] as Array<[string[], RegExp]>
    ).map(([args, message]) => [label(args), args, message] as const),
  )('refuses `%s` with exit code 2 and one line on stderr', async (_label, args, message) => {
    const res = await runCli(args, env);
    expectUsageError(res, message);
    expect(res.stdout).toBe('');
  });

  it('refuses a CDP_INITIAL_ADMIN_KEY that could never authenticate', async () => {
    const res = await runCli(['start'], {
      ...env,
      CDP_INITIAL_ADMIN_KEY: 'my-own-secret-that-is-long-enough-1234',
    });
    expectUsageError(res, /CDP_INITIAL_ADMIN_KEY must be cdp_sk_/);
  });

  it('refuses a bad setting by naming the variable', async () => {
    expectUsageError(await runCli(['migrate'], { ...env, PORT: 'eighty' }), /PORT must be a whole number/);
  });
});

describe('cdp when a dependency is down', () => {
  const expectOneLineFailure = (res: { code: number | null; stderr: string }, text: RegExp) => {
    expect(res.code).toBe(1);
    expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(text);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  };

  it('names an unreachable database in one line and exits 1', async () => {
    const res = await runCli(['migrate'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expectOneLineFailure(res, /^cdp: connect ECONNREFUSED 127\.0\.0\.1:1 \(ECONNREFUSED\)/);
  });

  it('names an unreachable Redis in one line and exits 1', async () => {
    const env = serviceEnv({ REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'fatal' });
    if (env.DATABASE_SCHEMA) schemas.push(env.DATABASE_SCHEMA);
    const res = await runCli(['start'], env);
    expectOneLineFailure(res, /^cdp: Redis at REDIS_URL did not answer/);
  });
});

describe(`cdp on an empty database (${ENGINE})`, () => {
  it('creates workspace "default" on first start, prints its admin key once, and not again', async () => {
    const env = emptyDbEnv();
    const first = await start(env);
    console.log(
      `first start on an empty ${ENGINE} database: ${first.startupMs} ms from spawn to /health 200`,
    );
    expect(first.startupMs).toBeLessThan(60_000);
    const printed = first.stdout().match(ADMIN_KEY_LINE);
    expect(printed).not.toBeNull();
    const adminKey = printed![1]!;
    expect(first.stdout().match(new RegExp(adminKey, 'g'))).toHaveLength(1);
    const keys = await request(first.url!, 'GET', '/tenant/apikeys', { key: adminKey });
    expect(keys.status).toBe(200);
    expect(keys.body.data).toHaveLength(1);
    expect(keys.body.data[0].scopes).toEqual(['admin']);
    expect((await first.stop()).code).toBe(0);

    const second = await start(env);
    expect(second.stdout()).not.toMatch(/Admin API key/);
    expect(second.stdout()).not.toContain(adminKey);
    expect((await request(second.url!, 'GET', '/tenant/apikeys', { key: adminKey })).status).toBe(200);
    expect((await second.stop()).code).toBe(0);
  });

  it('uses CDP_INITIAL_ADMIN_KEY as the first admin key when it is set, and never prints it', async () => {
    const fixed = `cdp_sk_${randomBytes(32).toString('base64url')}`;
    const svc = await start(emptyDbEnv({ CDP_INITIAL_ADMIN_KEY: fixed }));
    expect(svc.stdout()).not.toContain(fixed);
    expect(svc.stdout()).not.toMatch(/Admin API key/);
    expect(svc.logs().find((l) => String(l.msg).startsWith('created workspace "default"'))).toBeTruthy();
    expect(svc.stderr()).not.toContain(fixed);
    expect((await request(svc.url!, 'GET', '/tenant/apikeys', { key: fixed })).status).toBe(200);
    await svc.stop();
  });
});

describe(`cdp migrate, workspace create, key create (${ENGINE})`, () => {
  // Not started from the migrated template (test/global-setup.ts): `cdp migrate` has all to do.
  const env = emptyDbEnv({ PGLITE_TEMPLATE: '' });

  it('migrates, creates a workspace and a key that a started service accepts', async () => {
    const versions = loadMigrations().map((m) => m.version);
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout)).toEqual({ applied: versions });
    const again = await runCli(['migrate'], env);
    expect(JSON.parse(again.stdout)).toEqual({ applied: [] });

    const ws = await runCli(['workspace', 'create', 'Acme Inc.'], env);
    expect(ws.code).toBe(0);
    const created = JSON.parse(ws.stdout);
    expect(created.workspace).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Acme Inc.',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(created.api_key).toMatchObject({
      id: expect.stringMatching(/^key_/),
      scopes: ['admin'],
      allowed_domains: [],
      api_key: expect.stringMatching(/^cdp_sk_/),
    });

    const key = await runCli(
      ['key', 'create', '--workspace', created.workspace.id, '--scopes', 'viewer,ingest', '--name', 'x'],
      env,
    );
    expect(key.code).toBe(0);
    const k = JSON.parse(key.stdout);
    expect(k).toMatchObject({ name: 'x', scopes: ['viewer', 'ingest'], allowed_domains: [] });
    expect(k.api_key).toMatch(/^cdp_sk_[A-Za-z0-9_-]{43}$/);

    const missing = await runCli(
      ['key', 'create', '--workspace', '1b4e28ba-2fa1-41d2-883f-0016d3cca427', '--scopes', 'viewer'],
      env,
    );
    expectUsageError(missing, /no workspace 1b4e28ba-2fa1-41d2-883f-0016d3cca427/);

    const svc = await start(env);
    // The database already had a workspace, so no "default" one was bootstrapped.
    expect(svc.stdout()).not.toMatch(/Admin API key/);
    const listed = await request(svc.url!, 'GET', '/tenant/apikeys', { key: created.api_key.api_key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((x: { name: string }) => x.name)).toEqual(['admin', 'x']);
    // The viewer+ingest key authenticates (403 for the admin-only route, not 401).
    const limited = await request(svc.url!, 'GET', '/tenant/apikeys', { key: k.api_key });
    expect(limited.status).toBe(403);
    expect(limited.body.error_code).toBe('INSUFFICIENT_SCOPE');
    // PGlite allows one process per data directory: stop before the next test opens it.
    expect((await svc.stop()).code).toBe(0);
  });

  it('reads and changes a workspace’s settings, by name, with dotted keys and JSON values', async () => {
    const set = await runCli(
      [
        'settings',
        'set',
        'rate_limits.requests_per_minute=500',
        'junk_identifiers=["demo-user"]',
        '--workspace',
        'Acme Inc.',
      ],
      env,
    );
    expect(set.code, set.stderr).toBe(0);
    const get = await runCli(['settings', 'get', '--workspace', 'Acme Inc.'], env);
    expect(get.code, get.stderr).toBe(0);
    for (const out of [JSON.parse(set.stdout), JSON.parse(get.stdout)]) {
      expect(out.workspace.name).toBe('Acme Inc.');
      expect(out.settings).toMatchObject({
        rate_limits: { requests_per_minute: 500, batch_events_per_minute: 10_000 },
        junk_identifiers: ['demo-user'],
        merge_cap: 100,
      });
    }
  });

  it('says so in one line when the port is taken', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      // The database is not empty any more, so nothing else is printed before the refusal.
      const res = await runCli(['start'], { ...env, PORT: String(port), LOG_LEVEL: 'warn' });
      expectUsageError(res, new RegExp(`127.0.0.1:${port} is already in use`));
      expect(res.stdout).toBe('');
    } finally {
      blocker.close();
    }
  });
});

describe(`cdp commands beside a running service (${ENGINE})`, () => {
  // The service's port is its own (PORT=0 here); the commands below are run without PORT, as a user
  // types them in another terminal. On PGlite they go through the service, on PostgreSQL straight
  // to the database: either way the running service sees what they did.
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  const env = emptyDbEnv({ CDP_INITIAL_ADMIN_KEY: adminKey });
  const cliEnv = { ...env };
  delete cliEnv.PORT;
  delete cliEnv.HOST;
  let svc: ServiceProcess;

  it('loads the demo customers, which the service’s own API then shows', async () => {
    svc = await start(env);
    const res = await runCli(['demo', '--customers', '20', '--seed', '3'], cliEnv);
    expect(res.code, res.stderr).toBe(0);
    const summary = res.stdout.match(/(\d+) events queued in [\d.]+ s \(20 customers, (\d+) orders\)/);
    expect(summary, res.stdout).not.toBeNull();
    const orders = Number(summary![2]);
    expect(orders).toBeGreaterThan(0);

    // The running service processes them: every completed order shows up in its API.
    let seen = 0;
    await waitUntil(
      async () => {
        const page = await request(svc.url!, 'GET', '/tenant/orders?status=completed&limit=500', {
          key: adminKey,
        });
        expect(page.status).toBe(200);
        seen = page.body.data.length;
        return seen >= orders;
      },
      {
        what: `the ${orders} completed orders in the API`,
        timeoutMs: 60_000,
        intervalMs: 100,
        detail: () => `${seen} so far`,
      },
    );
    expect(seen).toBe(orders);
  });

  it('creates a workspace and a key, and changes settings, all in effect in the running service', async () => {
    const ws = await runCli(['workspace', 'create', 'Beside'], cliEnv);
    expect(ws.code, ws.stderr).toBe(0);
    const created = JSON.parse(ws.stdout);
    const key = await runCli(
      ['key', 'create', '--workspace', created.workspace.id, '--scopes', 'viewer', '--name', 'beside'],
      cliEnv,
    );
    expect(key.code, key.stderr).toBe(0);
    const viewerKey = JSON.parse(key.stdout).api_key as string;
    expect((await request(svc.url!, 'GET', '/tenant/profiles?limit=1', { key: viewerKey })).status).toBe(200);

    const set = await runCli(['settings', 'set', 'churn_threshold=0.55', '--workspace', 'Beside'], cliEnv);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout).settings.churn_threshold).toBe(0.55);
    const get = await runCli(['settings', 'get', '--workspace', 'Beside'], cliEnv);
    expect(JSON.parse(get.stdout).settings.churn_threshold).toBe(0.55);
    const seen = await request(svc.url!, 'GET', '/tenant/settings', { key: created.api_key.api_key });
    expect(seen.body.data.churn_threshold).toBe(0.55);

    const jobs = await runCli(['jobs'], cliEnv);
    expect(jobs.code, jobs.stderr).toBe(0);
    expect(JSON.parse(jobs.stdout)).toHaveProperty('counts');
    expect((await svc.stop()).code).toBe(0);
  });
});
