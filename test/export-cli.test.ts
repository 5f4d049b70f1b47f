import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRecordSplitter, firstField } from '../src/transfer-records';
import { killAllChildren, request, runCli, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema, ENGINE } from './harness';
import { waitUntil } from './wait';

// A real service and real `cdp` processes (seconds each on a busy 2-core machine).
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/**
 * `cdp export` and `cdp import` as an operator runs them: against a running service over HTTP,
 * writing and reading real files.
 */
const OPERATOR = `op_${randomBytes(16).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'cdp-export-'));
const file = (name: string) => join(dir, name);
let svc: ServiceProcess;
let schema: string | undefined;
let keyA: string;

/** 60 people: traits, page views (some anonymous first, then identified: a merge), orders. */
function workspaceEvents(): unknown[] {
  const events: unknown[] = [];
  for (let p = 0; p < 60; p++) {
    const email = `person${p}@example.com`;
    const anon = `00000000-0000-4000-8000-${String(p).padStart(12, '0')}`;
    events.push({ anonymous_id: anon, event_type: 'page', event_name: 'Home', payload: { path: '/' } });
    events.push({
      identity: email,
      anonymous_id: anon,
      event_type: 'identify',
      event_name: 'Signed up',
      payload: {
        first_name: `P${p}`,
        plan: p % 3 ? 'free' : 'pro',
        tags: ['a', `t${p}`],
        note: 'comma, "quote"',
      },
    });
    for (let k = 0; k < 8; k++)
      events.push({
        identity: email,
        event_type: 'track',
        event_name: 'Viewed',
        payload: { k, blob: 'x'.repeat(300) },
      });
    if (p % 2)
      events.push({
        identity: email,
        event_type: 'order',
        event_name: 'Order Completed',
        payload: { order_id: `o${p}`, total: 10 + p },
      });
  }
  return events;
}

async function waitIdle(key: string): Promise<void> {
  await waitUntil(
    async () =>
      (await request(svc.url!, 'GET', '/tenant/stats', { key })).body?.data?.ingestion_backlog === 0,
    { what: 'the workspace’s events to be processed', timeoutMs: 60_000 },
  );
}

async function newWorkspace(name: string): Promise<string> {
  const res = await request(svc.url!, 'POST', '/system/workspaces', { token: OPERATOR, body: { name } });
  expect(res.status).toBe(200);
  return res.body.data.api_key.api_key;
}

const cdp = (args: string[], key: string, url = svc.url!) =>
  runCli([...args, '--url', url, '--key', key], {});

/** The people a profiles export holds, as comparable values (ids and times differ between workspaces). */
function people(path: string) {
  return readFileSync(path, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l))
    .map((p) => ({
      email: p.email,
      first_name: p.first_name,
      attributes: p.attributes,
      total_spend: p.total_spend,
      identities: [...p.identities].sort((a, b) =>
        `${a.type}${a.value}`.localeCompare(`${b.type}${b.value}`),
      ),
    }))
    .sort((a, b) => String(a.email).localeCompare(String(b.email)));
}

beforeAll(async () => {
  const env = serviceEnv({ CDP_OPERATOR_TOKEN: OPERATOR });
  schema = env.DATABASE_SCHEMA;
  keyA = env.CDP_INITIAL_ADMIN_KEY!;
  svc = await startService(env);
  const res = await request(svc.url!, 'POST', '/tenant/ingest/batch', { key: keyA, body: workspaceEvents() });
  expect(res.status).toBe(202);
  await waitIdle(keyA);
});

afterAll(async () => {
  await svc?.stop();
  killAllChildren();
  rmSync(dir, { recursive: true, force: true });
  if (schema) await dropSchema(process.env.DATABASE_URL!, schema);
});

describe(`cdp export and cdp import (${ENGINE})`, () => {
  it('exports events and profiles, and the events imported into another workspace bring out the same people', async () => {
    const exported = await cdp(['export', 'events', '--out', file('a-events.ndjson')], keyA);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/exported 630 events to .*a-events\.ndjson/);
    const profilesA = await cdp(['export', 'profiles', '--out', file('a-profiles.ndjson')], keyA);
    expect(profilesA.code, profilesA.stderr).toBe(0);
    expect(people(file('a-profiles.ndjson'))).toHaveLength(60);

    const keyB = await newWorkspace('imported');
    const imported = await cdp(['import', file('a-events.ndjson')], keyB);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({
      lines: 630,
      events_accepted: 630,
      lines_rejected: 0,
      rejected: [],
    });
    await waitIdle(keyB);
    const profilesB = await cdp(['export', 'profiles', '--out', file('b-profiles.ndjson')], keyB);
    expect(profilesB.code, profilesB.stderr).toBe(0);
    expect(people(file('b-profiles.ndjson'))).toEqual(people(file('a-profiles.ndjson')));

    // The original ids became message ids: a second import stores nothing twice.
    expect((await cdp(['import', file('a-events.ndjson')], keyB)).code).toBe(0);
    await waitIdle(keyB);
    expect((await cdp(['export', 'events', '--out', file('b-events.ndjson')], keyB)).code).toBe(0);
    expect(readFileSync(file('b-events.ndjson'), 'utf8').trimEnd().split('\n')).toHaveLength(630);
  });

  it('resumes by itself when the connection drops mid-export, writing the same file as an unbroken export', async () => {
    for (const format of ['ndjson', 'csv'] as const) {
      const whole = file(`whole.${format}`);
      expect((await cdp(['export', 'events', '--out', whole], keyA)).code).toBe(0);
      // A proxy that cuts each of the first two export connections after 40 KB.
      const proxy = await cuttingProxy(new URL(svc.url!).port, 2, 40_000);
      try {
        const cut = file(`cut.${format}`);
        const res = await cdp(['export', 'events', '--out', cut], keyA, proxy.url);
        expect(res.code, res.stderr).toBe(0);
        expect(proxy.cuts()).toBe(2);
        expect(res.stderr).toMatch(/resumed 2×/);
        expect(readFileSync(cut, 'utf8')).toBe(readFileSync(whole, 'utf8'));
        const ids = createRecordSplitter(format)
          .push(readFileSync(cut, 'utf8'))
          .slice(format === 'csv' ? 1 : 0)
          .map((r) => firstField(r, format));
        expect(new Set(ids).size).toBe(630);
      } finally {
        await proxy.close();
      }
    }
  });

  it('reports each rejected line with its number and reason, stores the others, and exits 1', async () => {
    const good = (n: number) =>
      JSON.stringify({
        identity: `r${n}@example.com`,
        event_type: 'track',
        event_name: 'Good',
        message_id: `r-${n}`,
      });
    const lines = [
      good(1),
      'not json at all',
      '[1, 2, 3]',
      good(2),
      JSON.stringify({ identity: 'r@example.com', event_type: 'track' }),
      '',
      JSON.stringify({
        event_type: 'track',
        event_name: 'x',
        identity: 'big@example.com',
        payload: { s: 'y'.repeat(1_100_000) },
      }),
      good(3),
      JSON.stringify({ identity: 'r@example.com', event_type: 'teleport', event_name: 'x' }),
    ];
    writeFileSync(file('mixed.ndjson'), `${lines.join('\n')}\n`);
    const keyC = await newWorkspace('rejects');
    const res = await cdp(['import', file('mixed.ndjson')], keyC);
    expect(res.code).toBe(1);
    const summary = JSON.parse(res.stdout);
    expect(summary).toMatchObject({ lines: 9, blank_lines: 1, events_accepted: 3, lines_rejected: 5 });
    expect(summary.rejected.map((r: { line: number }) => r.line)).toEqual([2, 3, 5, 7, 9]);
    const reasons = summary.rejected.map((r: { reason: string }) => r.reason);
    expect(reasons[0]).toMatch(/^not JSON/);
    expect(reasons[1]).toBe('not a JSON object (an array)');
    expect(reasons[2]).toMatch(/event_name/);
    expect(reasons[3]).toMatch(/longer than 1048576 bytes/);
    expect(reasons[4]).toMatch(/event_type/);
    expect(res.stderr).toMatch(/imported 3 events .* 5 lines rejected/);
  });

  it('refuses bad arguments with exit code 2, and names what the service refused with exit code 1', async () => {
    for (const args of [
      ['export'],
      ['export', 'events'],
      ['export', 'people', '--out', file('x')],
      ['export', 'segment-members', '--out', file('x')],
      ['export', 'events', '--format', 'xml', '--out', file('x')],
      ['export', 'events', '--since', 'yesterday', '--out', file('x')],
      ['import'],
      ['import', file('no-such-file.ndjson')],
    ]) {
      const res = await cdp(args, keyA);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/^cdp: /);
    }
    expect((await runCli(['export', 'events', '--out', file('x'), '--url', svc.url!], {})).code).toBe(2);
    const refused = await cdp(
      ['export', 'events', '--out', file('x')],
      `cdp_sk_${randomBytes(32).toString('base64url')}`,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/401 INVALID_TENANT_KEY/);
    const unknown = await cdp(
      ['export', 'segment-members', '--segment', 'seg_nope', '--out', file('x')],
      keyA,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 NOT_FOUND: segment not found/);
  });
});

/**
 * A TCP proxy to the service that cuts the first `times` connections which carry an export after
 * `afterBytes` of the answer: the client sees its answer end in the middle.
 */
async function cuttingProxy(port: string, times: number, afterBytes: number) {
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), '127.0.0.1');
    sockets.add(client).add(upstream);
    let sent = 0;
    let cutThis = false;
    client.on('data', (d: Buffer) => {
      if (!cutThis && cuts < times && d.toString('latin1').startsWith('GET /tenant/exports/')) {
        cutThis = true;
        cuts++;
      }
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      sent += d.length;
      if (cutThis && sent > afterBytes) {
        client.write(d.subarray(0, d.length - (sent - afterBytes)));
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(d);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${own}`,
    cuts: () => cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
