/**
 * One valid request per audited route, for the route walk (test/audit-walk.test.ts).
 *
 * EVERY route that changes state (POST, PUT, PATCH, DELETE) or declares an audit action needs one
 * entry here, unless it declares `audit: { exempt: '<why>' }` in its config.
 *
 * - Key: the route exactly as registered, "METHOD /path/:param".
 * - Value: an async function that prepares what the request needs in `ctx.ws` (the walk's own
 *   workspace: use `ctx.svc.call` with `ctx.ws.adminKey`) and returns the request and the entry it
 *   must write: `target` (the target's id, or a function of the answer when only the answer knows
 *   it), and, when not the admin key, `principal` and `workspace`.
 *
 *   'DELETE /tenant/things/:id': async ({ svc, ws }) => {
 *     const thing = created(await svc.call('POST', '/tenant/things', { key: ws.adminKey, body: { name: 'x' } }));
 *     return { url: `/tenant/things/${thing.id}`, target: thing.id };
 *   },
 *
 * The walk sends the request, expects a success, and finds the one entry with the answer's
 * X-Request-Id: its action and target type as the route declares, its target id, its principal and
 * workspace as the fixture says, and no secret anywhere in it.
 */
import { randomUUID } from 'node:crypto';
import { insertTestEvents, waitProcessed } from '../src/modules/processing/processing.test-kit';
import type { Reply, TestService, TestWorkspace } from './harness';
import { created } from './route-matrix.fixtures';

export interface WalkContext {
  svc: TestService;
  /** A workspace of the walk's own, so entries of other tests never mix in. */
  ws: TestWorkspace;
  operatorToken: string;
}

/** Who the entry must name. */
export type ExpectedPrincipal =
  | { type: 'api_key'; keyOf: string }
  | { type: 'session'; sessionId: string | ((answer: Reply) => Promise<string>) }
  | { type: 'operator' };

export interface WalkRequest {
  url: string;
  body?: unknown;
  /** The key to send; default `ws.adminKey`; null for none (a cookie or a token in `headers`). */
  key?: string | null;
  headers?: Record<string, string>;
  /** The target's id; null where the route keeps none (`id: 'none'`). */
  target: string | null | ((answer: Reply) => string | Promise<string>);
  /** Values the entry must not contain anywhere (a person's identifier the route must not keep). */
  absent?: string[];
  /** Default: the admin key of `ws`. */
  principal?: ExpectedPrincipal;
  /** The workspace the entry belongs to; default `ws`. */
  workspace?: (answer: Reply) => string;
}

export type WalkFixture = (ctx: WalkContext) => Promise<WalkRequest>;

const call = (ctx: WalkContext, method: string, url: string, body?: unknown) =>
  ctx.svc.call(method, url, { key: ctx.ws.adminKey, body });

const newProfile = async (ctx: WalkContext): Promise<string> =>
  created(await call(ctx, 'POST', '/tenant/profiles', { identity: `walk-${randomUUID()}@example.com` })).id;

const newSegment = async (ctx: WalkContext): Promise<string> =>
  created(
    await call(ctx, 'POST', '/tenant/segments', {
      name: `walk ${randomUUID()}`,
      query: { field: 'total_spend', op: 'gte', value: 1 },
    }),
  ).id;

const newProduct = async (ctx: WalkContext): Promise<string> => {
  const id = `walk-${randomUUID()}`;
  created(await call(ctx, 'POST', '/tenant/products', { product_id: id, name: 'walk' }));
  return id;
};

/** A subscription to a public address literal (no DNS lookup, nothing sent until a fact exists). */
const newWebhook = async (ctx: WalkContext): Promise<string> =>
  created(
    await call(ctx, 'POST', '/tenant/webhooks', {
      url: 'https://93.184.215.14/walk',
      events: ['profile.created'],
    }),
  ).id;

/** A signed-in console session of the admin key: its cookie, CSRF token and id. */
async function signIn(ctx: WalkContext): Promise<{ headers: Record<string, string>; sessionId: string }> {
  const res = await ctx.svc.call('POST', '/tenant/session', {
    key: null,
    body: { api_key: ctx.ws.adminKey },
  });
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  const { rows } = await ctx.svc.rt.deps.db.query<{ id: string }>(
    'SELECT id FROM console_sessions WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [ctx.ws.id],
  );
  return { headers: { cookie, 'x-csrf-token': created(res).csrf_token }, sessionId: rows[0]!.id };
}

/** The session the answer's cookie holds (the newest of the workspace: the walk signs in one at a time). */
const newestSession = async (ctx: WalkContext): Promise<string> => {
  const { rows } = await ctx.svc.rt.deps.db.query<{ id: string }>(
    'SELECT id FROM console_sessions WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [ctx.ws.id],
  );
  return rows[0]!.id;
};

export const WALK_FIXTURES: Record<string, WalkFixture> = {
  'POST /system/workspaces': async ({ operatorToken }) => ({
    url: '/system/workspaces',
    body: { name: 'walk' },
    key: null,
    headers: { authorization: `Bearer ${operatorToken}` },
    principal: { type: 'operator' },
    workspace: (answer) => answer.body.data.workspace.id,
    target: (answer) => answer.body.data.workspace.id,
  }),
  'PATCH /tenant/settings': async ({ ws }) => ({
    url: '/tenant/settings',
    body: { merge_cap: 50 },
    target: ws.id,
  }),
  'POST /tenant/apikeys': async () => ({
    url: '/tenant/apikeys',
    body: { name: 'walk', scopes: ['viewer'] },
    target: (answer) => answer.body.data.id,
  }),
  'DELETE /tenant/apikeys/:key_id': async (ctx) => {
    const key = created(await call(ctx, 'POST', '/tenant/apikeys', { name: 'walk', scopes: ['viewer'] }));
    return { url: `/tenant/apikeys/${key.id}`, target: key.id };
  },
  'POST /tenant/products': async () => ({
    url: '/tenant/products',
    body: { product_id: 'walk-new', name: 'walk' },
    target: 'walk-new',
  }),
  'PATCH /tenant/products/:id': async (ctx) => {
    const id = await newProduct(ctx);
    return { url: `/tenant/products/${id}`, body: { name: 'renamed' }, target: id };
  },
  'DELETE /tenant/products/:id': async (ctx) => {
    const id = await newProduct(ctx);
    return { url: `/tenant/products/${id}`, target: id };
  },
  'POST /tenant/profiles': async () => ({
    url: '/tenant/profiles',
    body: { identity: `walk-${randomUUID()}@example.com`, first_name: 'Walk' },
    target: (answer) => answer.body.data.id,
  }),
  'PUT /tenant/profiles/:id/consent': async (ctx) => {
    const id = await newProfile(ctx);
    return { url: `/tenant/profiles/${id}/consent`, body: { categories: { analytics: false } }, target: id };
  },
  'DELETE /tenant/profiles/:id': async (ctx) => {
    const id = await newProfile(ctx);
    return { url: `/tenant/profiles/${id}?suppress=true`, target: id };
  },
  'POST /identity/merge': async (ctx) => {
    const [primary, secondary] = [await newProfile(ctx), await newProfile(ctx)];
    return {
      url: '/identity/merge',
      body: { primary_profile_id: primary, secondary_profile_ids: [secondary] },
      target: primary,
    };
  },
  'POST /tenant/segments': async () => ({
    url: '/tenant/segments',
    body: { name: 'walk created', query: { field: 'total_spend', op: 'gte', value: 5 } },
    target: (answer) => answer.body.data.id,
  }),
  'PATCH /tenant/segments/:id': async (ctx) => {
    const id = await newSegment(ctx);
    return { url: `/tenant/segments/${id}`, body: { name: `renamed ${randomUUID()}` }, target: id };
  },
  'DELETE /tenant/segments/:id': async (ctx) => {
    const id = await newSegment(ctx);
    return { url: `/tenant/segments/${id}`, target: id };
  },
  'POST /intelligence/models/fit': async () => ({
    // A workspace without orders fits the fallback at once.
    url: '/intelligence/models/fit',
    target: (answer) => answer.body.data.fit_id,
  }),
  'POST /tenant/dead-letters/:id/retry': async (ctx) => {
    // An event with no usable identifier is dead-lettered by the worker.
    const db = ctx.svc.rt.deps.db;
    await insertTestEvents(db, ctx.ws.id, [
      { identity: 'anonymous', event_type: 'track', event_name: 'walk' },
    ]);
    await waitProcessed(db);
    const letter = created(await call(ctx, 'GET', '/tenant/dead-letters'))[0].id as string;
    return { url: `/tenant/dead-letters/${letter}/retry`, target: letter };
  },
  'POST /tenant/webhooks': async () => ({
    url: '/tenant/webhooks',
    body: {
      url: 'https://93.184.215.14/walk-new',
      events: ['profile.created'],
      secret: `whsec_${'A'.repeat(43)}=`,
    },
    target: (answer) => answer.body.data.id,
  }),
  'PATCH /tenant/webhooks/:id': async (ctx) => {
    const id = await newWebhook(ctx);
    return { url: `/tenant/webhooks/${id}`, body: { enabled: false }, target: id };
  },
  'POST /tenant/webhooks/:id/rotate-secret': async (ctx) => {
    const id = await newWebhook(ctx);
    return { url: `/tenant/webhooks/${id}/rotate-secret`, body: { grace_seconds: 60 }, target: id };
  },
  'POST /tenant/webhooks/:id/test': async (ctx) => {
    // The test send really connects: a loopback port nothing listens on fails at once, offline.
    const id = await newWebhook(ctx);
    await ctx.svc.rt.deps.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE id = $1', [
      id,
      'http://127.0.0.1:9/walk',
    ]);
    return { url: `/tenant/webhooks/${id}/test`, target: id };
  },
  'DELETE /tenant/webhooks/:id': async (ctx) => {
    const id = await newWebhook(ctx);
    return { url: `/tenant/webhooks/${id}`, target: id };
  },
  'POST /tenant/webhooks/:id/deliveries/:delivery_id/redeliver': async (ctx) => {
    const hook = await newWebhook(ctx);
    const delivery = `dlv_walk${randomUUID().replaceAll('-', '')}`;
    await ctx.svc.rt.deps.db.query(
      `INSERT INTO webhook_deliveries (id, workspace_id, subscription_id, event_id, event_type, body, status)
       VALUES ($1, $2, $3, 'evt_walk', 'profile.created', '{}'::jsonb, 'dead')`,
      [delivery, ctx.ws.id, hook],
    );
    return { url: `/tenant/webhooks/${hook}/deliveries/${delivery}/redeliver`, target: delivery };
  },
  'POST /tenant/session': async (ctx) => ({
    url: '/tenant/session',
    key: null,
    body: { api_key: ctx.ws.adminKey },
    principal: { type: 'session', sessionId: () => newestSession(ctx) },
    target: () => newestSession(ctx),
  }),
  'DELETE /tenant/suppressions/:identifier': async (ctx) => {
    const email = `walk-suppressed-${randomUUID()}@example.com`;
    const id = created(await call(ctx, 'POST', '/tenant/profiles', { identity: email })).id;
    created(await call(ctx, 'DELETE', `/tenant/profiles/${id}?suppress=true`));
    return { url: `/tenant/suppressions/${encodeURIComponent(email)}`, target: null, absent: [email] };
  },
  'GET /tenant/profiles/:id/export': async (ctx) => {
    const id = await newProfile(ctx);
    return { url: `/tenant/profiles/${id}/export`, target: id };
  },
  'GET /tenant/exports/events': async (ctx) => ({
    url: '/tenant/exports/events?format=csv',
    target: ctx.ws.id,
  }),
  'GET /tenant/exports/profiles': async (ctx) => ({ url: '/tenant/exports/profiles', target: ctx.ws.id }),
  'GET /tenant/exports/orders': async (ctx) => ({ url: '/tenant/exports/orders', target: ctx.ws.id }),
  'GET /tenant/exports/segments/:id/members': async (ctx) => {
    const id = await newSegment(ctx);
    return { url: `/tenant/exports/segments/${id}/members`, target: id };
  },
  'DELETE /tenant/session': async (ctx) => {
    const { headers, sessionId } = await signIn(ctx);
    return {
      url: '/tenant/session',
      key: null,
      headers,
      principal: { type: 'session', sessionId },
      target: sessionId,
    };
  },
};
