import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import {
  ENGINE,
  type Reply,
  startTestService,
  type TestService,
  type TestWorkspace,
} from '../../../test/harness';
import { buildApp } from '../../app';
import type { AuditSink } from '../../platform/http/audit';
import { createLogger } from '../../platform/logger';

/** docs/api.md, "Audit log": what an entry records, what it never records, and who can read it. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

// biome-ignore lint/suspicious/noExplicitAny: entries are inspected field by field
type Entry = any;

/** The workspace's entries through the API, newest first (all pages). */
async function entriesOf(ws: TestWorkspace, query = ''): Promise<Entry[]> {
  const all: Entry[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '';
    const url: string = `/tenant/audit-log?${query}${sep}limit=500${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await svc.call('GET', url, { key: ws.adminKey });
    expect(res.status, res.text).toBe(200);
    all.push(...res.body.data);
    cursor = res.body.pagination.next_cursor;
  } while (cursor);
  return all;
}

const byRequest = async (ws: TestWorkspace, res: Reply): Promise<Entry> => {
  const found = (await entriesOf(ws)).filter((e) => e.request_id === res.headers['x-request-id']);
  expect(found, `one entry for request ${res.headers['x-request-id']}`).toHaveLength(1);
  return found[0];
};

async function newKey(ws: TestWorkspace, scopes: string[], name = 'someone') {
  const res = await svc.call('POST', '/tenant/apikeys', { key: ws.adminKey, body: { name, scopes } });
  expect(res.status, res.text).toBe(200);
  return { id: res.body.data.id as string, secret: res.body.data.api_key as string, name };
}

async function signIn(apiKey: string) {
  const res = await svc.call('POST', '/tenant/session', { key: null, body: { api_key: apiKey } });
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  return { res, headers: { cookie, 'x-csrf-token': res.body?.data?.csrf_token as string } };
}

describe(`an entry (${ENGINE})`, () => {
  it('records time, principal with the key’s name, action, target, request id, client and status', async () => {
    const ws = await svc.newWorkspace('entry');
    const admin = await newKey(ws, ['admin'], 'release bot');
    const before = Date.now();
    const res = await svc.call('POST', '/tenant/segments', {
      key: admin.secret,
      headers: { 'user-agent': 'curl/8.5.0' },
      body: { name: 'big spenders', query: { field: 'total_spend', op: 'gte', value: 100 } },
    });
    expect(res.status).toBe(200);
    const entry = await byRequest(ws, res);
    expect(entry).toEqual({
      id: expect.stringMatching(/^aud_/),
      time: expect.any(String),
      action: 'segment.create',
      principal: { type: 'api_key', key_id: admin.id, key_name: 'release bot' },
      target: { type: 'segment', id: res.body.data.id },
      diff: {
        request: { body: { name: 'big spenders', query: { field: 'total_spend', op: 'gte', value: 100 } } },
      },
      request_id: res.headers['x-request-id'],
      client_ip: '127.0.0.1',
      user_agent: 'curl/8.5.0',
      status: 200,
    });
    expect(Date.parse(entry.time)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(entry.time)).toBeLessThanOrEqual(Date.now());
  });

  it('is committed before the answer leaves: it is there the moment the answer is', async () => {
    const ws = await svc.newWorkspace('durable');
    const res = await svc.call('POST', '/tenant/apikeys', {
      key: ws.adminKey,
      body: { name: 'k', scopes: ['viewer'] },
    });
    const { rows } = await svc.rt.deps.db.query('SELECT 1 FROM audit_log WHERE request_id = $1', [
      res.headers['x-request-id'],
    ]);
    expect(rows).toHaveLength(1);
  });

  it('records only the settings that changed, before and after', async () => {
    const ws = await svc.newWorkspace('settings');
    const res = await svc.call('PATCH', '/tenant/settings', {
      key: ws.adminKey,
      body: { merge_cap: 7, retention: { audit_days: 30 } },
    });
    expect(res.status, res.text).toBe(200);
    const entry = await byRequest(ws, res);
    expect(entry.target).toEqual({ type: 'workspace', id: ws.id });
    expect(entry.diff).toEqual({
      before: { merge_cap: 100, retention: { audit_days: 400 } },
      after: { merge_cap: 7, retention: { audit_days: 30 } },
    });
  });

  it('cuts the user agent to 256 characters', async () => {
    const ws = await svc.newWorkspace('ua');
    const res = await svc.call('POST', '/tenant/apikeys', {
      key: ws.adminKey,
      headers: { 'user-agent': 'x'.repeat(1000) },
      body: { name: 'k', scopes: ['viewer'] },
    });
    expect((await byRequest(ws, res)).user_agent).toBe('x'.repeat(256));
  });

  it('names a console session and its key when the console acted', async () => {
    const ws = await svc.newWorkspace('console');
    const editor = await newKey(ws, ['editor'], 'ada at the console');
    const session = await signIn(editor.secret);
    const res = await svc.call('POST', '/tenant/profiles', {
      key: null,
      headers: session.headers,
      body: { identity: 'console@example.com' },
    });
    expect(res.status, res.text).toBe(200);
    const { rows } = await svc.rt.deps.db.query<{ id: string }>(
      'SELECT id FROM console_sessions WHERE key_id = $1',
      [editor.id],
    );
    expect((await byRequest(ws, res)).principal).toEqual({
      type: 'session',
      session_id: rows[0]!.id,
      key_id: editor.id,
      key_name: 'ada at the console',
    });
    // The sign-in itself is an entry of the session, with its key.
    expect((await byRequest(ws, session.res)).principal).toEqual({
      type: 'session',
      session_id: rows[0]!.id,
      key_id: editor.id,
      key_name: 'ada at the console',
    });
  });
});

describe('what an entry never keeps', () => {
  it('redacts secrets by field name and by their look, and keeps the rest', async () => {
    const ws = await svc.newWorkspace('secrets');
    const pasted = `cdp_sk_${'a'.repeat(43)}`;
    const res = await svc.call('POST', '/tenant/webhooks', {
      key: ws.adminKey,
      body: {
        url: 'https://93.184.215.14/hook',
        events: ['profile.created'],
        secret: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
      },
    });
    expect(res.status, res.text).toBe(200);
    const hook = await byRequest(ws, res);
    expect(hook.diff.request.body).toEqual({
      url: 'https://93.184.215.14/hook',
      events: ['profile.created'],
      secret: '[redacted]',
    });

    const key = await svc.call('POST', '/tenant/apikeys', {
      key: ws.adminKey,
      body: { name: pasted, scopes: ['viewer'] },
    });
    const entry = await byRequest(ws, key);
    expect(entry.diff.request.body.name).toBe('[redacted]');
    // The created key's secret is in the answer only, never in the trail.
    const dump = JSON.stringify((await svc.rt.deps.db.query('SELECT * FROM audit_log')).rows);
    expect(dump).not.toContain(key.body.data.api_key);
    expect(dump).not.toContain(pasted);
  });

  it('keeps the key a console sign-in was made with out of its entry', async () => {
    const ws = await svc.newWorkspace('sign-in');
    const { res } = await signIn(ws.adminKey);
    expect(res.status).toBe(201);
    const entry = await byRequest(ws, res);
    expect(entry.action).toBe('session.create');
    expect(entry.diff).toEqual({ request: { body: { api_key: '[redacted]' } } });
  });

  it('shrinks a diff over 16 KiB to the names of its fields and its size', async () => {
    const ws = await svc.newWorkspace('large');
    const res = await svc.call('POST', '/tenant/profiles', {
      key: ws.adminKey,
      body: { identity: 'large@example.com', attributes: { notes: 'n'.repeat(20_000) } },
    });
    expect(res.status, res.text).toBe(200);
    const entry = await byRequest(ws, res);
    expect(entry.diff).toEqual({
      truncated: true,
      bytes: expect.any(Number),
      fields: ['request.body.identity', 'request.body.attributes'],
    });
    expect(entry.diff.bytes).toBeGreaterThan(20_000);
  });
});

describe('refused requests', () => {
  it('write nothing when refused before their handler: no key, wrong scope, invalid body', async () => {
    const ws = await svc.newWorkspace('refused');
    const viewer = await newKey(ws, ['viewer']);
    const before = (await entriesOf(ws)).length;
    expectError(await svc.call('POST', '/tenant/apikeys', { key: null, body: {} }), 401, 'MISSING_API_KEY');
    expectError(
      await svc.call('POST', '/tenant/apikeys', {
        key: viewer.secret,
        body: { name: 'x', scopes: ['admin'] },
      }),
      403,
      'INSUFFICIENT_SCOPE',
    );
    expectError(
      await svc.call('POST', '/tenant/apikeys', { key: ws.adminKey, body: { name: '' } }),
      400,
      'VALIDATION_ERROR',
    );
    expect(await entriesOf(ws)).toHaveLength(before);
  });

  it('write an entry with their status and no body when their handler refused them', async () => {
    const ws = await svc.newWorkspace('handler-refused');
    const res = await svc.call('DELETE', '/tenant/apikeys/key_0000000000nosuchkey', { key: ws.adminKey });
    expectError(res, 404, 'NOT_FOUND');
    expect(await byRequest(ws, res)).toMatchObject({
      action: 'apikey.revoke',
      target: { type: 'api_key', id: 'key_0000000000nosuchkey' },
      diff: null,
      status: 404,
    });
  });

  it('record a console sign-in refused for a key of the workspace, without the key', async () => {
    const ws = await svc.newWorkspace('sign-in-refused');
    const ingest = await newKey(ws, ['ingest'], 'the shop’s ingest key');
    const revoked = await newKey(ws, ['admin'], 'old admin');
    expect((await svc.call('DELETE', `/tenant/apikeys/${revoked.id}`, { key: ws.adminKey })).status).toBe(
      200,
    );

    const scope = (await signIn(ingest.secret)).res;
    expectError(scope, 403, 'INSUFFICIENT_SCOPE');
    expect(await byRequest(ws, scope)).toMatchObject({
      action: 'session.create',
      principal: { type: 'api_key', key_id: ingest.id, key_name: 'the shop’s ingest key' },
      target: { type: 'session', id: null },
      diff: null,
      status: 403,
    });
    const gone = (await signIn(revoked.secret)).res;
    expectError(gone, 401, 'INVALID_TENANT_KEY');
    expect(await byRequest(ws, gone)).toMatchObject({
      principal: { type: 'api_key', key_id: revoked.id, key_name: 'old admin' },
      status: 401,
    });
    const dump = JSON.stringify((await svc.rt.deps.db.query('SELECT * FROM audit_log')).rows);
    expect(dump).not.toContain(ingest.secret);
    expect(dump).not.toContain(revoked.secret);
  });
});

describe('what is not in the trail', () => {
  it('an ingested event: the event log is its record', async () => {
    const ws = await svc.newWorkspace('ingest');
    const ingest = await newKey(ws, ['ingest']);
    const before = (await entriesOf(ws)).length;
    const res = await svc.call('POST', '/api/ingest', {
      key: ingest.secret,
      body: { identity: 'shopper@example.com', event_type: 'track', event_name: 'Viewed' },
    });
    expect(res.status, res.text).toBe(202);
    expect(await entriesOf(ws)).toHaveLength(before);
  });

  it('a console sign-in with a key that exists nowhere: one warn line in the log instead', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    const app = await buildApp({ ...svc.rt.deps, log: createLogger('info', sink) });
    try {
      const unknown = `cdp_sk_${'u'.repeat(43)}`;
      const rowsBefore = (await svc.rt.deps.db.query('SELECT 1 FROM audit_log')).rows.length;
      const res = await app.inject({
        method: 'POST',
        url: '/tenant/session',
        headers: { 'content-type': 'application/json', 'user-agent': 'guesser/1.0' },
        payload: JSON.stringify({ api_key: unknown }),
      });
      expect(res.statusCode).toBe(401);
      expect((await svc.rt.deps.db.query('SELECT 1 FROM audit_log')).rows.length).toBe(rowsBefore);
      const line = lines.find((l) => l.msg === 'audited request names no workspace: logged only');
      expect(line).toMatchObject({
        level: 40,
        reqId: res.headers['x-request-id'],
        action: 'session.create',
        status: 401,
        ip: '127.0.0.1',
        userAgent: 'guesser/1.0',
      });
      expect(JSON.stringify(lines)).not.toContain(unknown);
    } finally {
      await app.close();
    }
  });
});

describe('GET /tenant/audit-log', () => {
  let ws: TestWorkspace;
  let other: Awaited<ReturnType<typeof newKey>>;
  let sessionId: string;
  beforeAll(async () => {
    ws = await svc.newWorkspace('listing');
    other = await newKey(ws, ['admin'], 'other admin');
    for (let i = 0; i < 3; i++) {
      await svc.call('POST', '/tenant/segments', {
        key: other.secret,
        body: { name: `s${i}`, query: { field: 'total_spend', op: 'gte', value: i } },
      });
    }
    const session = await signIn(other.secret);
    const product = await svc.call('POST', '/tenant/products', {
      key: null,
      headers: session.headers,
      body: { product_id: 'p1', name: 'p' },
    });
    expect(product.status, product.text).toBe(200);
    const { rows } = await svc.rt.deps.db.query<{ id: string }>(
      'SELECT id FROM console_sessions WHERE key_id = $1',
      [other.id],
    );
    sessionId = rows[0]!.id;
  });

  it('pages the entries newest first, each page continuing the last', async () => {
    const all = await entriesOf(ws);
    const times = all.map((e) => `${e.time} ${e.id}`);
    expect(times).toEqual([...times].sort().reverse());
    const first = await svc.call('GET', '/tenant/audit-log?limit=2', { key: ws.adminKey });
    expect(first.body.pagination).toMatchObject({ limit: 2, has_more: true });
    const second = await svc.call(
      'GET',
      `/tenant/audit-log?limit=2&cursor=${first.body.pagination.next_cursor}`,
      {
        key: ws.adminKey,
      },
    );
    expect([...first.body.data, ...second.body.data].map((e: Entry) => e.id)).toEqual(
      all.slice(0, 4).map((e) => e.id),
    );
  });

  it('filters by action', async () => {
    const found = await entriesOf(ws, 'action=segment.create');
    expect(found).toHaveLength(3);
    expect(new Set(found.map((e) => e.action))).toEqual(new Set(['segment.create']));
  });

  it('filters by principal: a key (with its console sessions) or one session', async () => {
    const byKey = await entriesOf(ws, `principal=${other.id}`);
    expect(byKey.map((e) => e.action).sort()).toEqual([
      'product.save',
      'segment.create',
      'segment.create',
      'segment.create',
      'session.create',
    ]);
    const bySession = await entriesOf(ws, `principal=${sessionId}`);
    expect(bySession.map((e) => e.action).sort()).toEqual(['product.save', 'session.create']);
  });

  it('filters by time: since inclusive, until exclusive', async () => {
    const all = await entriesOf(ws);
    const middle = all[2];
    const since = await entriesOf(ws, `since=${encodeURIComponent(middle.time)}`);
    expect(since.every((e) => e.time >= middle.time)).toBe(true);
    expect(since.map((e) => e.id)).toContain(middle.id);
    const until = await entriesOf(ws, `until=${encodeURIComponent(middle.time)}`);
    expect(until.every((e) => e.time < middle.time)).toBe(true);
    expect(since.length + until.length).toBe(all.length);
  });

  it.each([
    ['action=Not-An-Action', '/action'],
    [`principal=${'x'.repeat(201)}`, '/principal'],
    ['since=yesterday', '/since'],
    ['until=2024-13-01T00:00:00Z', '/until'],
    ['since=2025-01-02T00:00:00Z&until=2025-01-01T00:00:00Z', '/since'],
    ['limit=501', '/limit'],
  ])('refuses %s: 400 naming %s', async (query, path) => {
    const res = await svc.call('GET', `/tenant/audit-log?${query}`, { key: ws.adminKey });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('refuses a cursor of another filter', async () => {
    const first = await svc.call('GET', '/tenant/audit-log?limit=1&action=segment.create', {
      key: ws.adminKey,
    });
    const res = await svc.call(
      'GET',
      `/tenant/audit-log?limit=1&cursor=${first.body.pagination.next_cursor}`,
      {
        key: ws.adminKey,
      },
    );
    expectError(res, 400, 'INVALID_CURSOR');
  });

  it('shows a workspace only its own entries', async () => {
    const mine = await entriesOf(await svc.newWorkspace('empty'));
    expect(mine).toEqual([]);
  });
});

describe('when the entry cannot be written', () => {
  let app: Awaited<ReturnType<typeof buildApp>>;
  const lines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    const failing: AuditSink = {
      write: async () => {
        throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
      },
    };
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    app = await buildApp({ ...svc.rt.deps, audit: failing, log: createLogger('info', sink) });
    await app.ready();
  });
  afterAll(async () => app?.close());

  it('answers 503 instead of acknowledging the change, and logs why', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/tenant/apikeys',
      headers: { 'x-api-key': svc.ws.adminKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'unaudited', scopes: ['viewer'] }),
    });
    const reply = { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body };
    expectError(reply, 503, 'UNAVAILABLE');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).not.toContain('cdp_sk_');
    expect(
      lines.some((l) => l.msg === 'audit entry could not be written' && l.reqId === reply.body.request_id),
    ).toBe(true);
  });
});
