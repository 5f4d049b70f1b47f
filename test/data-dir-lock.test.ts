import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { killAllChildren, request, runCli, type ServiceProcess, startService } from './child';
import { onlyOn } from './skips';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * The embedded database belongs to one process at a time: every process that opens DATA_DIR locks
 * it first (src/platform/db/data-dir-lock.ts), and a second opener is sent away before it touches a
 * file. Real processes, because a lock only means something between processes. PostgreSQL serves
 * many processes and takes no such lock, so this file runs on PGlite only.
 */
const embeddedOnly = onlyOn('pglite', 'the lock guards the embedded DATA_DIR');
const dirs: string[] = [];
const services: ServiceProcess[] = [];

afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
  killAllChildren();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function embeddedEnv(): { env: Record<string, string>; dir: string; adminKey: string } {
  const root = mkdtempSync(join(tmpdir(), 'cdp-lock-'));
  dirs.push(root);
  const dir = join(root, 'data');
  const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
  return {
    dir,
    adminKey,
    env: { LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0', DATA_DIR: dir, CDP_INITIAL_ADMIN_KEY: adminKey },
  };
}

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const svc = await startService(env);
  services.push(svc);
  return svc;
}

/** One line on stderr, exit 1, naming the holder's PID and saying what to do instead. */
function expectRefused(res: { code: number | null; stderr: string }, holderPid: number, todo: RegExp) {
  expect(res.code, res.stderr).toBe(1);
  const lines = res.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^cdp: DATA_DIR .* is in use by .*PID ${holderPid}\\b`));
  expect(lines[0]).toMatch(todo);
  expect(res.stderr).not.toMatch(/\n\s+at /);
}

const ingest = (url: string, key: string, n: number) =>
  request(url, 'POST', '/tenant/ingest/batch', {
    key,
    body: Array.from({ length: n }, (_, i) => ({
      event_type: 'track',
      event_name: 'Lock Test',
      identity: `lock-${i}@example.com`,
      message_id: `lock-${i}`,
    })),
  });

embeddedOnly.describe('two processes on one embedded DATA_DIR', () => {
  it('refuses a second `cdp start` before it opens the database, naming the first one’s PID; the data stays whole', async () => {
    const { env, adminKey } = embeddedEnv();
    const first = await start(env);
    const stored = await ingest(first.url!, adminKey, 25);
    expect(stored.status).toBe(202);

    // Another port, the same directory: the lock, not the port, is what sends it away.
    const second = await runCli(['start'], env, 60_000);
    expectRefused(second, first.pid, /stop it first/);
    expect(second.stdout).toBe('');

    // The first service never noticed, and everything it stored is there after a restart.
    expect((await request(first.url!, 'GET', '/ready')).status).toBe(200);
    expect((await first.stop()).code).toBe(0);
    const again = await start(env);
    const retried = await ingest(again.url!, adminKey, 25);
    expect(retried.status).toBe(202);
    // Every message id was stored before: the original event ids come back, nothing is stored twice.
    expect(retried.body.event_ids).toEqual(stored.body.event_ids);
    expect((await again.stop()).code).toBe(0);
  });

  it('refuses `cdp migrate` beside a running service, saying to stop it first', async () => {
    const { env } = embeddedEnv();
    const svc = await start(env);
    const cliEnv = { ...env };
    delete cliEnv.PORT;
    const res = await runCli(['migrate'], cliEnv);
    expectRefused(res, svc.pid, /stop (it|the service) first/);
    expect((await request(svc.url!, 'GET', '/ready')).status).toBe(200);
    expect((await svc.stop()).code).toBe(0);
  });

  it('lets only the token in its lock file run CLI commands in the service', async () => {
    const { env, dir, adminKey } = embeddedEnv();
    const svc = await start(env);
    const lock = JSON.parse(readFileSync(join(dir, 'cdp.lock'), 'utf8'));
    expect(lock).toMatchObject({ pid: svc.pid, url: svc.url });
    expect(statSync(join(dir, 'cdp.lock')).mode & 0o777).toBe(0o600);
    const jobs = { argv: ['jobs'] };
    for (const credential of [{}, { key: adminKey }, { token: `${lock.token}x` }]) {
      const res = await request(svc.url!, 'POST', '/system/commands', { ...credential, body: jobs });
      expect(res.status).toBe(401);
    }
    const ok = await request(svc.url!, 'POST', '/system/commands', { token: lock.token, body: jobs });
    expect(ok.status).toBe(200);
    expect(ok.body.data.output).toHaveProperty('counts');
    // What needs the database to itself is refused there too.
    const migrate = await request(svc.url!, 'POST', '/system/commands', {
      token: lock.token,
      body: { argv: ['migrate'] },
    });
    expect(migrate.status).toBe(400);
    expect((await svc.stop()).code).toBe(0);
  });

  it('takes over the lock of a service killed with SIGKILL', async () => {
    const { env, dir, adminKey } = embeddedEnv();
    const first = await start(env);
    const stored = await ingest(first.url!, adminKey, 10);
    expect(stored.status).toBe(202);
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(existsSync(join(dir, 'cdp.lock'))).toBe(true);

    const second = await start(env);
    const retried = await ingest(second.url!, adminKey, 10);
    expect(retried.status).toBe(202);
    expect(retried.body.event_ids).toEqual(stored.body.event_ids);
    expect((await second.stop()).code).toBe(0);
    // A clean stop leaves no lock behind.
    expect(existsSync(join(dir, 'cdp.lock'))).toBe(false);
  });
});
