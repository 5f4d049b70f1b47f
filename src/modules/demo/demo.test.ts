import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, startTestService, type TestService, testEnv } from '../../../test/harness';
import { ConfigError, loadConfig } from '../../config';
import { WORKERS } from '../../worker';
import { normalizeEvent } from '../ingest';
import { runDemoCommand } from './demo.command';
import { generateDemoEvents } from './demo.generator';
import { loadDemoDataset } from './demo.service';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const now = new Date();
const countRows = async (sql: string, params: unknown[]) =>
  (await svc.rt.deps.db.query<{ n: number }>(sql, params)).rows[0]!.n;

/** A port nothing listens on (so the "is a service running?" probe finds none). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('loading the demo dataset', () => {
  it('queues every event of the dataset in the workspace’s event log, once', async () => {
    const ws = await svc.newWorkspace('demo');
    const opts = { seed: 3, customers: 40, now };
    const expected = [...generateDemoEvents(opts)].length;
    const first = await loadDemoDataset(svc.rt.deps.db, ws.id, opts);
    expect(first).toMatchObject({ workspace_id: ws.id, customers: 40, events: expected, stored: expected });
    expect(first.orders).toBeGreaterThan(0);
    expect(await countRows('SELECT count(*)::int AS n FROM events WHERE workspace_id = $1', [ws.id])).toBe(
      expected,
    );
    const orderEvents = await countRows(
      `SELECT count(*)::int AS n FROM events WHERE workspace_id = $1 AND event_type = 'order' AND occurred_at < now()`,
      [ws.id],
    );
    expect(orderEvents).toBeGreaterThanOrEqual(first.orders);

    const again = await loadDemoDataset(svc.rt.deps.db, ws.id, opts);
    expect(again.stored).toBe(0);
  });

  it('stores each event as the ingest path normalises it (the same function as HTTP)', async () => {
    const ws = await svc.newWorkspace('demo-normalised');
    const opts = { seed: 4, customers: 15, now };
    await loadDemoDataset(svc.rt.deps.db, ws.id, opts);
    const { rows } = await svc.rt.deps.db.query<Record<string, unknown>>(
      `SELECT message_id, event_type, event_name, anonymous_id, identity, payload,
              to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_at, api_key_id
         FROM events WHERE workspace_id = $1 ORDER BY seq`,
      [ws.id],
    );
    const src = { workspaceId: ws.id, apiKeyId: null, receivedAt: now.toISOString() };
    const expected = [...generateDemoEvents(opts)].map((e) => {
      const { id: _id, workspace_id: _ws, received_at: _r, ...row } = normalizeEvent(e, src);
      return row;
    });
    expect(rows).toEqual(expected);
    expect(rows.some((r) => r.event_type === 'order')).toBe(true);
  });

  // The processing worker turns the events into profiles and orders; once it is registered in
  // src/worker.ts this checks the whole path, from demo events to total_spend.
  const processor = WORKERS.find((w) => /event|process|pipeline/i.test(w.name));
  it.skipIf(!processor)('becomes profiles with orders and total_spend once processed', async () => {
    const ws = await svc.newWorkspace('demo-processed');
    await loadDemoDataset(svc.rt.deps.db, ws.id, { seed: 5, customers: 60, now });
    const deadline = Date.now() + 90_000;
    while (
      (await countRows(
        'SELECT count(*)::int AS n FROM events e WHERE e.workspace_id = $1 AND e.seq IN (SELECT seq FROM event_backlog)',
        [ws.id],
      )) > 0
    ) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 200));
    }
    const spenders = await countRows(
      'SELECT count(*)::int AS n FROM profiles WHERE workspace_id = $1 AND total_spend > 0',
      [ws.id],
    );
    expect(spenders).toBeGreaterThan(10);
    // total_spend is exactly the sum of each profile's completed orders.
    const mismatched = await countRows(
      `SELECT count(*)::int AS n FROM profiles p
       WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND p.total_spend <> coalesce(
         (SELECT sum(o.total) FROM orders o WHERE o.profile_id = p.id AND o.status = 'completed'), 0)`,
      [ws.id],
    );
    expect(mismatched).toBe(0);
    const res = await svc.call('GET', '/tenant/orders?limit=5', { key: ws.adminKey });
    expect(res.body.data).toHaveLength(5);
  });
});

describe('cdp demo', () => {
  it('bootstraps the default workspace of an empty database, prints its key once, and loads into it', async () => {
    // testEnv gives an in-memory PGlite, or a fresh PostgreSQL schema when DATABASE_URL is set.
    const config = loadConfig(testEnv({ PORT: String(await freePort()) }));
    const lines: string[] = [];
    try {
      const summary = await runDemoCommand(config, { customers: '25', seed: '9' }, (l) => lines.push(l));
      expect(summary.stored).toBe(summary.events);
      expect(lines.join('\n')).toMatch(/Created workspace "default".*\n[\s\S]*cdp_sk_/);
      expect(lines.at(-1)).toBe(
        `${summary.events} events queued in ${lines.at(-1)!.match(/in ([\d.]+) s/)![1]} s (25 customers, ` +
          `${summary.orders} orders); they are processed by the running service (or on next start).`,
      );
    } finally {
      if (config.databaseUrl && config.databaseSchema)
        await dropSchema(config.databaseUrl, config.databaseSchema);
    }
  });

  it.each([
    [{ customers: '0' }, /--customers must be a whole number from 1 to 100000/],
    [{ customers: 'many' }, /--customers/],
    [{ seed: '-1' }, /--seed/],
    [{ workspace: 'default' }, /--workspace must be a workspace id/],
  ])('refuses %j', async (opts, message) => {
    const config = loadConfig({ DATA_DIR: ':memory:', LOG_LEVEL: 'silent' });
    await expect(runDemoCommand(config, opts, () => {})).rejects.toThrow(message);
  });

  it('refuses to open an embedded database that a running service has open', async () => {
    const server: Server = createServer((_req, res) => res.end('{"status":"ok"}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'cdp-demo-busy-'));
    try {
      const config = loadConfig({
        DATA_DIR: dir,
        PORT: String((server.address() as AddressInfo).port),
        LOG_LEVEL: 'silent',
      });
      const run = runDemoCommand(config, {}, () => {});
      await expect(run).rejects.toBeInstanceOf(ConfigError);
      await expect(run).rejects.toThrow(/stop it first/);
    } finally {
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
