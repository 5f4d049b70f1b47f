import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, startTestService, type TestService, testEnv } from '../../../test/harness';
import { waitUntil } from '../../../test/wait';
import { loadConfig } from '../../config';
import { openDb } from '../../platform/db';
import { migrate } from '../../platform/db/migrate';
import { normalizeEvent } from '../ingest';
import { parseDemoOptions, runDemo } from './demo.command';
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

  // The service's processing worker turns the events into profiles and orders: the whole path,
  // from demo events to total_spend.
  it('becomes profiles with orders and total_spend once processed', async () => {
    const ws = await svc.newWorkspace('demo-processed');
    await loadDemoDataset(svc.rt.deps.db, ws.id, { seed: 5, customers: 60, now });
    await waitUntil(
      async () =>
        (await countRows(
          'SELECT count(*)::int AS n FROM events e WHERE e.workspace_id = $1 AND e.seq IN (SELECT seq FROM event_backlog)',
          [ws.id],
        )) === 0,
      { what: 'the demo events to be processed', timeoutMs: 90_000, intervalMs: 200 },
    );
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
    const config = loadConfig(testEnv());
    const lines: string[] = [];
    const db = await openDb(config);
    try {
      await migrate(db);
      const options = parseDemoOptions({ customers: '25', seed: '9' });
      const summary = await runDemo(db, config, options, (l) => lines.push(l));
      expect(summary.stored).toBe(summary.events);
      expect(lines.join('\n')).toMatch(/Created workspace "default".*\n[\s\S]*cdp_sk_/);
      expect(lines.at(-1)).toBe(
        `${summary.events} events queued in ${lines.at(-1)!.match(/in ([\d.]+) s/)![1]} s (25 customers, ` +
          `${summary.orders} orders); they are processed by the running service (or on next start).`,
      );
    } finally {
      await db.close();
      if (config.databaseUrl && config.databaseSchema)
        await dropSchema(config.databaseUrl, config.databaseSchema);
    }
  });

  it.each([
    [{ customers: '0' }, /--customers must be a whole number from 1 to 100000/],
    [{ customers: 'many' }, /--customers/],
    [{ seed: '-1' }, /--seed/],
    [{ workspace: 'default' }, /--workspace must be a workspace id/],
  ])('refuses %j', (opts, message) => {
    expect(() => parseDemoOptions(opts)).toThrow(message);
  });
});
