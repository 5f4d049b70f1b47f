import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Analytics } from '@segment/analytics-node';
import { Value } from 'typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';
import { MAX_LISTED_MEMBERS } from './accounts.limits';
import { AccountDetailSchema, AccountSchema } from './accounts.schemas';

/**
 * Accounts read back through the HTTP API (docs/api.md, "Accounts"): what `group` calls stored, from
 * the real Segment client to the listing and the account, within the key's workspace only.
 */
let svc: TestService;
let url: string;
let viewer: string;
beforeAll(async () => {
  svc = await startTestService();
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  viewer = await svc.ws.key(['viewer']);
});
afterAll(async () => svc?.close());

const read = (path: string, key = viewer) => svc.call('GET', path, { key });
const accountPath = (id: string) => `/tenant/accounts/${encodeURIComponent(id)}`;

async function profileIdOf(identity: string): Promise<string> {
  const res = await read(`/tenant/profiles?identity=${encodeURIComponent(identity)}`);
  expect(res.body.data, res.text).toHaveLength(1);
  return res.body.data[0].id;
}

/** Native events that a `group` call maps to (docs/ingestion.md), appended and processed. */
async function groupCalls(
  ws: TestWorkspace,
  calls: Array<{ identity: string; groupId: string; at?: string }>,
): Promise<void> {
  await insertTestEvents(
    svc.rt.deps.db,
    ws.id,
    calls.map((c) => ({
      identity: c.identity,
      event_type: 'track' as const,
      event_name: 'Group',
      payload: { group_id: c.groupId },
      ...(c.at ? { at: c.at } : {}),
    })),
  );
  await waitProcessed(svc.rt.deps.db);
}

const near = (iso: string, expected: string) =>
  expect(Math.abs(Date.parse(iso) - Date.parse(expected))).toBeLessThan(60_000);

describe('an account sent by @segment/analytics-node', () => {
  it('reads back with its traits, first and last seen, and the profiles that sent it', async () => {
    const ingestKey = await svc.ws.key(['ingest']);
    const analytics = new Analytics({ writeKey: ingestKey, host: url, flushAt: 4, flushInterval: 50 });
    const failures: unknown[] = [];
    analytics.on('error', (e) => failures.push(e));
    const [ada, bob] = [`ada-${randomUUID()}@example.com`, `bob-${randomUUID()}@example.com`];
    const group = `acme/${randomUUID()}`; // a slash: the id is read URL-encoded
    analytics.group({
      userId: ada,
      groupId: group,
      traits: { name: 'Acme', seats: 12 },
      timestamp: new Date('2024-02-01T10:00:00Z'),
    });
    analytics.group({
      userId: bob,
      groupId: group,
      traits: { seats: 20, plan: 'enterprise' },
      timestamp: new Date('2024-02-03T10:00:00Z'),
    });
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(failures).toEqual([]);
    await waitProcessed(svc.rt.deps.db);

    const res = await read(accountPath(group));
    expect(res.status, res.text).toBe(200);
    const account = res.body.data;
    expect(Value.Check(AccountDetailSchema, account), res.text).toBe(true);
    expect(account).toMatchObject({
      id: group,
      traits: { name: 'Acme', seats: 20, plan: 'enterprise' },
      member_count: 2,
    });
    near(account.first_seen, '2024-02-01T10:00:00Z');
    near(account.last_seen, '2024-02-03T10:00:00Z');
    const [adaId, bobId] = [await profileIdOf(ada), await profileIdOf(bob)];
    // Latest seen first.
    expect(account.members.map((m: { profile_id: string }) => m.profile_id)).toEqual([bobId, adaId]);
    near(account.members[1].first_seen, '2024-02-01T10:00:00Z');

    const listed = await read(`/tenant/accounts?profile_id=${adaId}`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([group]);
    expect(Value.Check(AccountSchema, listed.body.data[0])).toBe(true);
  });

  it('takes the first traits written to an account a Group event made, whatever their time, and then the newer call', async () => {
    // A Group event sent to /api/ingest makes the account (no traits); /v1/group calls older than
    // that event then write its traits: the first one as it is, the next by the newer-wins rule.
    const group = `made-by-event/${randomUUID()}`;
    await groupCalls(svc.ws, [
      { identity: 'event-first@example.com', groupId: group, at: '2024-05-01T12:00:00Z' },
    ]);
    const ingestKey = await svc.ws.key(['ingest']);
    for (const [timestamp, plan] of [
      ['2024-05-01T10:00:00Z', 'free'],
      ['2024-05-01T11:00:00Z', 'pro'],
    ] as const) {
      const res = await svc.call('POST', '/v1/group', {
        key: ingestKey,
        body: { userId: 'event-first@example.com', groupId: group, traits: { plan }, timestamp },
      });
      expect(res.status, res.text).toBe(200);
    }
    await waitProcessed(svc.rt.deps.db);
    const account = (await read(accountPath(group))).body.data;
    expect(account.traits).toEqual({ plan: 'pro' });
    near(account.first_seen, '2024-05-01T10:00:00Z');
    near(account.last_seen, '2024-05-01T12:00:00Z');
  });

  it('refuses a group id longer than an account id may be, and stores nothing of the call', async () => {
    const ingestKey = await svc.ws.key(['ingest']);
    const res = await svc.call('POST', '/v1/group', {
      key: ingestKey,
      body: { userId: 'long@example.com', groupId: 'x'.repeat(1001), traits: { name: 'Long' } },
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.text).toContain('/groupId');
  });
});

describe('GET /tenant/accounts', () => {
  it('lists the accounts in the order they were first stored, a page at a time', async () => {
    const ws = await svc.newWorkspace('accounts-list');
    const ids = ['first', 'second', 'third'].map((n) => `${n}-${randomUUID()}`);
    for (const groupId of ids) await groupCalls(ws, [{ identity: `${groupId}@example.com`, groupId }]);
    const page1 = await svc.call('GET', '/tenant/accounts?limit=2', { key: ws.adminKey });
    expect(page1.status, page1.text).toBe(200);
    expect(page1.body.data.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 2));
    expect(page1.body.pagination).toMatchObject({ limit: 2, has_more: true });
    const page2 = await svc.call(
      'GET',
      `/tenant/accounts?limit=2&cursor=${page1.body.pagination.next_cursor}`,
      { key: ws.adminKey },
    );
    expect(page2.body.data.map((a: { id: string }) => a.id)).toEqual(ids.slice(2));
    expect(page2.body.pagination).toEqual({ limit: 2, next_cursor: null, has_more: false });
  });

  it('lists no account for a profile unknown here, and refuses a profile_id that is not a uuid', async () => {
    const res = await read(`/tenant/accounts?profile_id=${randomUUID()}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual([]);
    expectError(await read('/tenant/accounts?profile_id=nope'), 400, 'VALIDATION_ERROR');
    expectError(await read('/tenant/accounts?limit=501'), 400, 'VALIDATION_ERROR');
  });
});

describe('GET /tenant/accounts/{id}', () => {
  it('answers 404 NOT_FOUND in the envelope for an unknown id', async () => {
    expectError(await read(accountPath(`nobody-${randomUUID()}`)), 404, 'NOT_FOUND');
  });

  it(`shows the ${MAX_LISTED_MEMBERS} most recently seen members and counts them all`, async () => {
    const ws = await svc.newWorkspace('accounts-big');
    const groupId = `big-${randomUUID()}`;
    const n = MAX_LISTED_MEMBERS + 2;
    const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString();
    await groupCalls(
      ws,
      Array.from({ length: n }, (_, i) => ({ identity: `m${i}@example.com`, groupId, at: at(i) })),
    );
    const res = await svc.call('GET', accountPath(groupId), { key: ws.adminKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.member_count).toBe(n);
    expect(res.body.data.members).toHaveLength(MAX_LISTED_MEMBERS);
    expect(res.body.data.members[0].last_seen).toBe(at(n - 1));
    expect(res.body.data.first_seen).toBe(at(0));
    expect(res.body.data.last_seen).toBe(at(n - 1));
    // A member-only account (no call's traits reached it): empty traits.
    expect(res.body.data.traits).toEqual({});
  });
});

describe('another workspace', () => {
  it('never sees the accounts of this one: 404 for the id, absent from its listing', async () => {
    const groupId = `private-${randomUUID()}`;
    await groupCalls(svc.ws, [{ identity: `${groupId}@example.com`, groupId }]);
    expect((await read(accountPath(groupId))).status).toBe(200);

    const other = await svc.newWorkspace('accounts-other');
    const otherViewer = await other.key(['viewer']);
    expectError(await read(accountPath(groupId), otherViewer), 404, 'NOT_FOUND');
    const listed = await read('/tenant/accounts?limit=500', otherViewer);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toEqual([]);
    // Nor through this workspace's profile id.
    const mine = await profileIdOf(`${groupId}@example.com`);
    expect((await read(`/tenant/accounts?profile_id=${mine}`, otherViewer)).body.data).toEqual([]);
  });
});
