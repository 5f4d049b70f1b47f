import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTwoCustomers } from '../src/modules/intelligence/intelligence.test-kit';
import { insertTestEvents, waitProcessed } from '../src/modules/processing/processing.test-kit';
import { waitSegmentsSettled } from '../src/modules/segments/segments.test-kit';
import type { RouteInfo } from '../src/platform/http/route-registry';
import { expectError } from './expect-error';
import { type Reply, startTestService, type TestWorkspace } from './harness';
import { appliesWhen } from './skips';

/**
 * Cursors are bound to their scope (docs/api.md, "Pagination"): every paginated route of the app
 * (a GET that takes `cursor`, as the OpenAPI document says) is run with cursors issued for another
 * workspace, another parent resource and another filter, and must answer 400 INVALID_CURSOR, while
 * its own cursors page through every row once. A new collection is in this table the moment it
 * takes a cursor, and fails until it has a listing below.
 */
const svc = await startTestService();
afterAll(async () => svc.close());

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is inspected field by field
const doc: any = (await svc.call('GET', '/openapi.json', { key: null })).body;
const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const queryParamsOf = (r: RouteInfo): string[] =>
  (doc.paths?.[openapiPath(r.url)]?.[r.method.toLowerCase()]?.parameters ?? [])
    .filter((p: { in: string }) => p.in === 'query')
    .map((p: { name: string }) => p.name);
const PAGING = ['limit', 'cursor'];

const paginated = svc.app.routeList.filter((r) => r.method === 'GET' && queryParamsOf(r).includes('cursor'));

/** A set of at least three rows of one paginated route, made in one workspace. */
interface Listing {
  /** The route's URL for the set, without `limit` or `cursor`. */
  url: string;
  /** Routes with path parameters: the same route for another parent of the same workspace. */
  sibling?: string;
  /** A value (matching at least one row) for every filter the route takes. */
  filters?: Record<string, string>;
}

type Seeder = (ws: TestWorkspace) => Promise<Listing>;

const as = (ws: TestWorkspace) => ({ key: ws.adminKey });
const dataOf = (res: Reply) => {
  expect(res.status, `seeding failed: ${res.text}`).toBeLessThan(300);
  return res.body.data;
};
const upsert = async (ws: TestWorkspace, body: object) =>
  dataOf(await svc.call('POST', '/tenant/profiles', { ...as(ws), body }));
const send = async (ws: TestWorkspace, events: Parameters<typeof insertTestEvents>[2]) => {
  await insertTestEvents(svc.rt.deps.db, ws.id, events);
  await waitProcessed(svc.rt.deps.db);
};
const profileOf = async (ws: TestWorkspace, identity: string): Promise<string> =>
  dataOf(await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identity)}`, as(ws)))[0].id;
const days = (n: number) => `2024-05-0${n}T00:00:00.000Z`;

/** One entry per paginated route, keyed "METHOD /pattern" as registered. */
const LISTINGS: Record<string, Seeder> = {
  'GET /tenant/apikeys': async (ws) => {
    for (const name of ['k1', 'k2'])
      dataOf(await svc.call('POST', '/tenant/apikeys', { ...as(ws), body: { name, scopes: ['viewer'] } }));
    return { url: '/tenant/apikeys' };
  },
  'GET /tenant/dead-letters': async (ws) => {
    // An event with no usable identifier is dead-lettered by the worker.
    await send(
      ws,
      [1, 2, 3].map((i) => ({
        identity: 'undefined',
        event_type: 'track' as const,
        event_name: `lost ${i}`,
      })),
    );
    return { url: '/tenant/dead-letters' };
  },
  'GET /tenant/profiles': async (ws) => {
    for (const i of [1, 2, 3]) await upsert(ws, { identity: `list-${i}`, email: `list-${i}@example.com` });
    return { url: '/tenant/profiles', filters: { email: 'list-2@example.com', identity: 'list-2' } };
  },
  'GET /tenant/profiles/:id/events': async (ws) => {
    const [a, b] = [randomUUID(), randomUUID()];
    await send(ws, [
      ...[1, 2, 3].map((d) => ({
        anonymous_id: a,
        event_type: 'page' as const,
        event_name: 'p',
        at: days(d),
      })),
      { anonymous_id: b, event_type: 'page', event_name: 'p', at: days(1) },
    ]);
    const [pa, pb] = [await profileOf(ws, a), await profileOf(ws, b)];
    return { url: `/tenant/profiles/${pa}/events`, sibling: `/tenant/profiles/${pb}/events` };
  },
  'GET /tenant/profiles/:id/lineage': async (ws) => {
    const p = await upsert(ws, { identity: `lin-${randomUUID()}`, first_name: 'A' });
    for (const first_name of ['B', 'C', 'D']) await upsert(ws, { id: p.id, first_name });
    const q = await upsert(ws, { identity: `lin-${randomUUID()}`, first_name: 'A' });
    await upsert(ws, { id: q.id, first_name: 'B' });
    return { url: `/tenant/profiles/${p.id}/lineage`, sibling: `/tenant/profiles/${q.id}/lineage` };
  },
  'GET /tenant/orders': async (ws) => {
    const buyer = `buyer-${randomUUID()}@example.com`;
    await send(
      ws,
      [1, 2, 3].map((d) => ({
        identity: buyer,
        event_type: 'order' as const,
        event_name: 'Order Completed',
        at: days(d),
        payload: { order_id: `o-${randomUUID()}`, total: d, status: 'completed' },
      })),
    );
    return {
      url: '/tenant/orders',
      filters: { profile_id: await profileOf(ws, buyer), status: 'completed' },
    };
  },
  'GET /tenant/accounts': async (ws) => {
    // One person's `group` calls to three accounts (docs/ingestion.md), so the filter matches all.
    const member = `member-${randomUUID()}@example.com`;
    await send(
      ws,
      [1, 2, 3].map((i) => ({
        identity: member,
        event_type: 'track' as const,
        event_name: 'Group',
        payload: { group_id: `acct-${i}-${randomUUID()}` },
      })),
    );
    return { url: '/tenant/accounts', filters: { profile_id: await profileOf(ws, member) } };
  },
  'GET /intelligence/backtests': async (ws) => {
    await loadTwoCustomers(svc.rt.deps.db, ws.id);
    for (const asOf of ['2025-01-10', '2025-01-20', '2025-01-30']) {
      const body = { as_of: `${asOf}T00:00:00Z`, holdout_end: '2025-06-01T00:00:00Z' };
      dataOf(await svc.call('POST', '/intelligence/models/fit', { ...as(ws), body }));
    }
    return { url: '/intelligence/backtests' };
  },
  'GET /tenant/products': async (ws) => {
    for (const i of [1, 2, 3]) {
      const body = { product_id: `pr-${i}`, name: `P${i}`, category: 'shoes' };
      dataOf(await svc.call('POST', '/tenant/products', { ...as(ws), body }));
    }
    return { url: '/tenant/products', filters: { category: 'shoes' } };
  },
  'GET /tenant/segments': async (ws) => {
    const { profile } = await seedSegments(ws);
    return { url: '/tenant/segments', filters: { profile_id: profile } };
  },
  'GET /tenant/segments/:id/members': async (ws) => {
    const { a, b } = await seedSegments(ws);
    return { url: `/tenant/segments/${a}/members`, sibling: `/tenant/segments/${b}/members` };
  },
  'GET /tenant/segments/:id/changes': async (ws) => {
    const { a, b } = await seedSegments(ws);
    return { url: `/tenant/segments/${a}/changes`, sibling: `/tenant/segments/${b}/changes` };
  },
  'GET /tenant/webhooks': async (ws) => {
    await seedWebhooks(ws);
    return { url: '/tenant/webhooks' };
  },
  'GET /tenant/webhooks/:id/deliveries': async (ws) => {
    const [a, b] = await seedWebhooks(ws);
    // Deliveries written directly: three for one subscription, one for its sibling.
    for (const [hook, n] of [
      [a, 3],
      [b, 1],
    ] as const) {
      for (let i = 0; i < n; i++) {
        await svc.rt.deps.db.query(
          `INSERT INTO webhook_deliveries (id, workspace_id, subscription_id, event_id, event_type, body)
           VALUES ($1, $2, $3, $4, 'profile.created', '{}'::jsonb)`,
          [`dlv_${randomUUID()}`, ws.id, hook, `evt_${randomUUID()}`],
        );
      }
    }
    return { url: `/tenant/webhooks/${a}/deliveries`, sibling: `/tenant/webhooks/${b}/deliveries` };
  },
  'GET /tenant/audit-log': async (ws) => {
    // Every key created writes one `apikey.create` entry, signed by the admin key.
    const before = new Date(Date.now() - 1000).toISOString();
    for (const name of ['a1', 'a2', 'a3'])
      dataOf(await svc.call('POST', '/tenant/apikeys', { ...as(ws), body: { name, scopes: ['viewer'] } }));
    const [entry] = dataOf(await svc.call('GET', '/tenant/audit-log?action=apikey.create&limit=1', as(ws)));
    return {
      url: '/tenant/audit-log',
      filters: {
        action: 'apikey.create',
        principal: entry.principal.key_id,
        since: before,
        until: new Date(Date.now() + 60_000).toISOString(),
      },
    };
  },
};

/** Three webhook subscriptions to a public address literal (no DNS, no private-URL setting needed). */
async function seedWebhooks(ws: TestWorkspace): Promise<string[]> {
  const ids: string[] = [];
  for (const i of [1, 2, 3]) {
    const body = { url: `https://93.184.215.14/hook-${i}`, events: ['profile.created'] };
    ids.push(dataOf(await svc.call('POST', '/tenant/webhooks', { ...as(ws), body })).id);
  }
  return ids;
}

/** Three segments with the same three members (and so three entries each), once membership settled. */
async function seedSegments(ws: TestWorkspace): Promise<{ a: string; b: string; profile: string }> {
  const tag = `seg-${randomUUID()}`;
  const ids: string[] = [];
  for (const name of ['s1', 's2', 's3']) {
    const body = { name, query: { event: { name: tag } } };
    ids.push(dataOf(await svc.call('POST', '/tenant/segments', { ...as(ws), body })).id);
  }
  await send(
    ws,
    [1, 2, 3].map((i) => ({
      identity: `${tag}-${i}@example.com`,
      event_type: 'track' as const,
      event_name: tag,
    })),
  );
  await waitSegmentsSettled(svc.rt.deps.db);
  return { a: ids[0]!, b: ids[1]!, profile: await profileOf(ws, `${tag}-1@example.com`) };
}

const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;

/** The `next_cursor` of the first one-row page of `url`. */
async function firstCursor(ws: TestWorkspace, url: string): Promise<string> {
  const res = await svc.call('GET', withQuery(url, 'limit=1'), as(ws));
  expect(res.status, res.text).toBe(200);
  expect(res.body.pagination.next_cursor, `${url} should have more than one row`).toEqual(expect.any(String));
  return res.body.pagination.next_cursor;
}

describe('the paginated routes', () => {
  it('are found in the OpenAPI document, and each has a listing here', () => {
    expect(paginated.map((r) => r.url)).toEqual(
      expect.arrayContaining(['/tenant/profiles', '/tenant/profiles/:id/events', '/tenant/orders']),
    );
    const known = new Set(paginated.map((r) => `${r.method} ${r.url}`));
    expect(
      Object.keys(LISTINGS).filter((k) => !known.has(k)),
      'listings of routes that do not page',
    ).toEqual([]);
  });
});

describe.each(paginated.map((r) => [`${r.method} ${r.url}`, r] as const))('%s', (name, route) => {
  const filters = queryParamsOf(route).filter((p) => !PAGING.includes(p));
  let a: TestWorkspace;
  let b: TestWorkspace;
  let inA: Listing;
  let inB: Listing;

  beforeAll(async () => {
    const seed = LISTINGS[name];
    if (!seed) {
      expect.fail(`no listing for "${name}": add one to LISTINGS in test/cursor-scope.test.ts`);
    }
    a = await svc.newWorkspace('cursor-a');
    b = await svc.newWorkspace('cursor-b');
    inA = await seed(a);
    inB = await seed(b);
  });

  /** Pages through `url` one row at a time and checks the pages add up to the whole set. */
  const pageThrough = async (url: string): Promise<number> => {
    const all = await svc.call('GET', withQuery(url, 'limit=500'), as(a));
    expect(all.status, all.text).toBe(200);
    const paged: unknown[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await svc.call('GET', withQuery(url, query), as(a));
      expect(res.status, res.text).toBe(200);
      paged.push(...res.body.data);
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(paged).toEqual(all.body.data);
    return paged.length;
  };

  it('pages through every row exactly once with its own cursors', async () => {
    expect(await pageThrough(inA.url)).toBeGreaterThanOrEqual(3);
  });

  const filtered = appliesWhen(filters.length > 0, 'the listing takes no filter');
  filtered.it('pages through a filtered set with the cursors issued for it', async () => {
    for (const filter of filters) {
      const value = inA.filters?.[filter];
      expect(value, `the listing of "${name}" needs a value for the filter "${filter}"`).toBeDefined();
      expect(
        await pageThrough(withQuery(inA.url, `${filter}=${encodeURIComponent(value!)}`)),
      ).toBeGreaterThan(0);
    }
  });

  it('refuses a cursor of another workspace: 400 INVALID_CURSOR', async () => {
    const foreign = await firstCursor(b, inB.url);
    // The very URL the cursor was issued for, and the same route for this workspace's own rows.
    for (const url of [inB.url, inA.url]) {
      expectError(await svc.call('GET', withQuery(url, `cursor=${foreign}`), as(a)), 400, 'INVALID_CURSOR');
    }
  });

  appliesWhen(route.params.length > 0, 'the listing has no parent resource').it(
    'refuses a cursor of another parent resource of the same workspace: 400 INVALID_CURSOR',
    async () => {
      expect(inA.sibling, `the listing of "${name}" needs a sibling (another parent)`).toBeDefined();
      const cursor = await firstCursor(a, inA.url);
      const res = await svc.call('GET', withQuery(inA.sibling!, `cursor=${cursor}`), as(a));
      expectError(res, 400, 'INVALID_CURSOR');
    },
  );

  filtered.it('refuses a cursor issued without the filter it is sent with: 400 INVALID_CURSOR', async () => {
    const cursor = await firstCursor(a, inA.url);
    for (const filter of filters) {
      const value = inA.filters?.[filter];
      expect(value, `the listing of "${name}" needs a value for the filter "${filter}"`).toBeDefined();
      const url = withQuery(inA.url, `${filter}=${encodeURIComponent(value!)}&cursor=${cursor}`);
      expectError(await svc.call('GET', url, as(a)), 400, 'INVALID_CURSOR');
    }
  });
});

describe('a profile merged away after a cursor of its events was issued', () => {
  it('keeps the cursor valid on the id it was issued for, and on no other', async () => {
    const ws = await svc.newWorkspace('cursor-merge');
    const [anonA, anonB, user] = [randomUUID(), randomUUID(), `merge-${randomUUID()}`];
    await send(ws, [
      ...[1, 2, 3].map((d) => ({
        anonymous_id: anonA,
        event_type: 'page' as const,
        event_name: 'a',
        at: days(d),
      })),
      ...[4, 5].map((d) => ({
        anonymous_id: anonB,
        event_type: 'page' as const,
        event_name: 'b',
        at: days(d),
      })),
    ]);
    const ids = [await profileOf(ws, anonA), await profileOf(ws, anonB)];
    const cursors = [
      await firstCursor(ws, `/tenant/profiles/${ids[0]}/events`),
      await firstCursor(ws, `/tenant/profiles/${ids[1]}/events`),
    ];
    // Both anonymous ids identify as the same user: the two profiles merge into one.
    await send(ws, [
      { anonymous_id: anonA, identity: user, event_type: 'identify', event_name: 'i', at: days(6) },
      { anonymous_id: anonB, identity: user, event_type: 'identify', event_name: 'i', at: days(7) },
    ]);
    const survivor = dataOf(await svc.call('GET', `/tenant/profiles/${ids[0]}`, as(ws))).id;
    expect(dataOf(await svc.call('GET', `/tenant/profiles/${ids[1]}`, as(ws))).id).toBe(survivor);
    const gone = ids.indexOf(survivor) === 0 ? 1 : 0;

    const same = await svc.call(
      'GET',
      `/tenant/profiles/${ids[gone]}/events?cursor=${cursors[gone]}`,
      as(ws),
    );
    expect(same.status, same.text).toBe(200);
    const other = await svc.call(
      'GET',
      `/tenant/profiles/${survivor}/events?cursor=${cursors[gone]}`,
      as(ws),
    );
    expectError(other, 400, 'INVALID_CURSOR');
  });
});
