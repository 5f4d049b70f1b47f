/**
 * Cross-workspace fixtures for the shared route test matrix (test/route-matrix.test.ts).
 *
 * EVERY key-protected route with a path parameter needs one entry here, or the matrix fails.
 *
 * - Key: the route exactly as registered, "METHOD /path/:param", e.g. 'GET /tenant/profiles/:id'.
 * - Value: an async function that creates a resource in `other` (a second workspace; use its
 *   `other.adminKey` with `svc.call`, or the services with `svc.rt.deps.db`) and returns the
 *   concrete URL of the route for that resource, plus `body` when the route needs one.
 *
 * The matrix then sends that request with the FIRST workspace's admin key and expects
 * 404 NOT_FOUND, and sends it again with `other.adminKey` and expects anything but 404 (which
 * proves the id was real). Set `ownerStatus` when the owner's answer is a 404 on purpose.
 *
 *   'DELETE /tenant/things/:id': async ({ svc, other }) => {
 *     const res = await svc.call('POST', '/tenant/things', { key: other.adminKey, body: { name: 'x' } });
 *     return { url: `/tenant/things/${created(res).id}` };
 *   },
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { applyOrderEvent } from '../src/modules/commerce/commerce.service';
import { insertTestEvents, waitProcessed } from '../src/modules/processing/processing.test-kit';
import type { Reply, TestService, TestWorkspace } from './harness';

export interface FixtureContext {
  svc: TestService;
  /** The second workspace, which owns the resource. */
  other: TestWorkspace;
}

export interface FixtureRequest {
  url: string;
  body?: unknown;
  /** What the owning workspace gets for the same request, if not "anything but 404". */
  ownerStatus?: number;
}

export type Fixture = (ctx: FixtureContext) => Promise<FixtureRequest>;

/** `data` of a successful answer; fails the fixture with the body when the set-up call failed. */
// biome-ignore lint/suspicious/noExplicitAny: fixtures read fields of freshly created resources
export function created(res: Reply): any {
  expect(res.status, `fixture set-up failed: ${res.text}`).toBeLessThan(300);
  return res.body.data;
}

export const FIXTURES: Record<string, Fixture> = {
  'DELETE /tenant/suppressions/:identifier': async ({ svc, other }) => {
    const identity = `matrix-${randomUUID()}@example.com`;
    const res = await svc.call('POST', '/tenant/profiles', { key: other.adminKey, body: { identity } });
    const erased = await svc.call('DELETE', `/tenant/profiles/${created(res).id}?suppress=true`, {
      key: other.adminKey,
    });
    created(erased);
    return { url: `/tenant/suppressions/${encodeURIComponent(identity)}` };
  },
  'DELETE /tenant/apikeys/:key_id': async ({ svc, other }) => {
    const res = await svc.call('POST', '/tenant/apikeys', {
      key: other.adminKey,
      body: { name: 'matrix', scopes: ['viewer'] },
    });
    return { url: `/tenant/apikeys/${created(res).id}` };
  },
  'GET /tenant/accounts/:id': async ({ svc, other }) => {
    await insertTestEvents(svc.rt.deps.db, other.id, [
      {
        identity: 'matrix@example.com',
        event_type: 'track',
        event_name: 'Group',
        payload: { group_id: 'matrix-co' },
      },
    ]);
    await waitProcessed(svc.rt.deps.db);
    return { url: '/tenant/accounts/matrix-co' };
  },
  'GET /tenant/orders/:order_id': async ({ svc, other }) => {
    const db = svc.rt.deps.db;
    const profileId = randomUUID();
    await db.query('INSERT INTO profiles (id, workspace_id) VALUES ($1, $2)', [profileId, other.id]);
    await db.transaction((tx) =>
      applyOrderEvent(tx, {
        workspaceId: other.id,
        profileId,
        eventId: 'evt_matrix',
        occurredAt: new Date(),
        payload: { order_id: 'matrix-order', total: 1 },
      }),
    );
    return { url: '/tenant/orders/matrix-order' };
  },
  ...Object.fromEntries(
    ['GET', 'PATCH', 'DELETE'].map((method) => [
      `${method} /tenant/products/:id`,
      async ({ svc, other }: FixtureContext): Promise<FixtureRequest> => {
        const productId = `matrix-${method.toLowerCase()}`;
        created(
          await svc.call('POST', '/tenant/products', {
            key: other.adminKey,
            body: { product_id: productId, name: 'm' },
          }),
        );
        return {
          url: `/tenant/products/${productId}`,
          ...(method === 'PATCH' ? { body: { name: 'n' } } : {}),
        };
      },
    ]),
  ),
  ...Object.fromEntries(
    [
      ['GET', '/tenant/profiles/:id', ''],
      ['DELETE', '/tenant/profiles/:id', ''],
      ['GET', '/tenant/profiles/:id/events', '/events'],
      ['GET', '/tenant/profiles/:id/lineage', '/lineage'],
      ['GET', '/tenant/profiles/:id/export', '/export'],
      ['PUT', '/tenant/profiles/:id/consent', '/consent'],
      ['GET', '/identity/graph/:profile_id', null],
    ].map(([method, route, suffix]) => [
      `${method} ${route}`,
      async ({ svc, other }: FixtureContext): Promise<FixtureRequest> => {
        const res = await svc.call('POST', '/tenant/profiles', {
          key: other.adminKey,
          body: { identity: `matrix-${randomUUID()}@example.com`, first_name: 'M' },
        });
        const id = created(res).id as string;
        return {
          url: suffix === null ? `/identity/graph/${id}` : `/tenant/profiles/${id}${suffix}`,
          ...(method === 'PUT' ? { body: { categories: { analytics: true } } } : {}),
        };
      },
    ]),
  ),
  ...Object.fromEntries(
    [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/members'],
      ['GET', '/changes'],
    ].map(([method, suffix]) => [
      `${method} /tenant/segments/:id${suffix}`,
      async ({ svc, other }: FixtureContext): Promise<FixtureRequest> => {
        const res = await svc.call('POST', '/tenant/segments', {
          key: other.adminKey,
          body: { name: 'matrix', query: { field: 'total_spend', op: 'gte', value: 1 } },
        });
        return {
          url: `/tenant/segments/${created(res).id}${suffix}`,
          ...(method === 'PATCH' ? { body: { name: 'renamed' } } : {}),
        };
      },
    ]),
  ),
  'GET /tenant/exports/segments/:id/members': async ({ svc, other }) => {
    const res = await svc.call('POST', '/tenant/segments', {
      key: other.adminKey,
      body: { name: 'matrix export', query: { field: 'total_spend', op: 'gte', value: 1 } },
    });
    return { url: `/tenant/exports/segments/${created(res).id}/members` };
  },
  ...Object.fromEntries(
    ['clv', 'churn'].map((what) => [
      `GET /intelligence/${what}/:id`,
      async ({ svc, other }: FixtureContext): Promise<FixtureRequest> => {
        const res = await svc.call('POST', '/tenant/profiles', {
          key: other.adminKey,
          body: { identity: `matrix-${randomUUID()}@example.com` },
        });
        return { url: `/intelligence/${what}/${created(res).id}` };
      },
    ]),
  ),
  'GET /intelligence/models/:fit_id': async ({ svc, other }) => {
    // A workspace without orders fits the fallback at once.
    const res = await svc.call('POST', '/intelligence/models/fit', { key: other.adminKey });
    return { url: `/intelligence/models/${created(res).fit_id}` };
  },
  'POST /tenant/dead-letters/:id/retry': async ({ svc, other }) => {
    // An event with no usable identifier is dead-lettered by the worker; retrying it is allowed.
    const db = svc.rt.deps.db;
    await insertTestEvents(db, other.id, [
      { identity: 'anonymous', event_type: 'track', event_name: 'matrix' },
    ]);
    await waitProcessed(db);
    const list = await svc.call('GET', '/tenant/dead-letters', { key: other.adminKey });
    return { url: `/tenant/dead-letters/${created(list)[0].id}/retry` };
  },
  ...Object.fromEntries(
    ['GET', 'PATCH', 'DELETE'].map((method) => [
      `${method} /tenant/webhooks/:id`,
      async ({ svc, other }: FixtureContext): Promise<FixtureRequest> => {
        const hook = await matrixWebhook(svc, other);
        return {
          url: `/tenant/webhooks/${hook.id}`,
          ...(method === 'PATCH' ? { body: { enabled: false } } : {}),
        };
      },
    ]),
  ),
  'POST /tenant/webhooks/:id/rotate-secret': async ({ svc, other }) => {
    const hook = await matrixWebhook(svc, other);
    return { url: `/tenant/webhooks/${hook.id}/rotate-secret`, body: { grace_seconds: 60 } };
  },
  'POST /tenant/webhooks/:id/test': async ({ svc, other }) => {
    // The owner's test send really connects: point it (directly, past the URL check) at a loopback
    // port nothing listens on, so it fails at once and offline (200, delivered: false).
    const hook = await matrixWebhook(svc, other);
    await svc.rt.deps.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE id = $1', [
      hook.id,
      'http://127.0.0.1:9/matrix',
    ]);
    return { url: `/tenant/webhooks/${hook.id}/test` };
  },
  'GET /tenant/webhooks/:id/deliveries': async ({ svc, other }) => {
    const hook = await matrixWebhook(svc, other);
    return { url: `/tenant/webhooks/${hook.id}/deliveries` };
  },
  'GET /tenant/webhooks/:id/deliveries/:delivery_id': async ({ svc, other }) => {
    const { hook, delivery } = await matrixDelivery(svc, other);
    return { url: `/tenant/webhooks/${hook}/deliveries/${delivery}` };
  },
  'POST /tenant/webhooks/:id/deliveries/:delivery_id/redeliver': async ({ svc, other }) => {
    const { hook, delivery } = await matrixDelivery(svc, other);
    return { url: `/tenant/webhooks/${hook}/deliveries/${delivery}/redeliver` };
  },
};

/** A subscription in `other` to a public address literal (no DNS lookup, no private-URL flag needed). */
async function matrixWebhook(svc: TestService, other: TestWorkspace) {
  const res = await svc.call('POST', '/tenant/webhooks', {
    key: other.adminKey,
    body: { url: 'https://93.184.215.14/matrix', events: ['profile.created'] },
  });
  return created(res);
}

/** A delivery of a subscription in `other`, written directly (no fact or receiver needed). */
async function matrixDelivery(svc: TestService, other: TestWorkspace) {
  const hook = (await matrixWebhook(svc, other)).id as string;
  const delivery = `dlv_matrix${randomUUID().replaceAll('-', '')}`;
  await svc.rt.deps.db.query(
    `INSERT INTO webhook_deliveries (id, workspace_id, subscription_id, event_id, event_type, body, status)
     VALUES ($1, $2, $3, 'evt_matrix', 'profile.created', '{}'::jsonb, 'dead')`,
    [delivery, other.id, hook],
  );
  return { hook, delivery };
}
