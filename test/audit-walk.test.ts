import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditedRoute, isAudited } from '../src/platform/http/audit';
import type { RouteInfo } from '../src/platform/http/route-registry';
import { WALK_FIXTURES, type WalkContext } from './audit-walk.fixtures';
import { ENGINE, startTestService, type TestWorkspace } from './harness';

/**
 * The route walk (docs/api.md, "Audit log"): every route of the real app that changes state, as
 * recorded when it was registered, either declares why it writes no audit entry or is called with a
 * valid request and must have written exactly one entry naming the action, the principal, the
 * target and the request. A new route is walked the moment it exists.
 */
const OPERATOR_TOKEN = `op_${randomBytes(24).toString('hex')}`;
const svc = await startTestService({ CDP_OPERATOR_TOKEN: OPERATOR_TOKEN });
afterAll(async () => svc.close());

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Reads that hand out a workspace's or a person's data in bulk: audited like changes. */
const isExport = (r: RouteInfo) => r.method === 'GET' && /\/exports?(\/|$)/.test(r.url);
const name = (r: RouteInfo) => `${r.method} ${r.url}`;
/** Routes that change state, exports, and routes that declare an action whatever their method. */
const walked = svc.app.routeList.filter(
  (r) => STATE_CHANGING.has(r.method) || isExport(r) || isAudited(r.audit ?? undefined),
);

let ws: TestWorkspace;
let ctx: WalkContext;
beforeAll(async () => {
  ws = await svc.newWorkspace('audit-walk');
  ctx = { svc, ws, operatorToken: OPERATOR_TOKEN };
});

interface EntryRow {
  workspace_id: string;
  action: string;
  principal_type: string;
  key_id: string | null;
  key_name: string | null;
  session_id: string | null;
  target_type: string;
  target_id: string | null;
  request_id: string;
  status: number;
  [column: string]: unknown;
}

const keyOf = async (workspaceId: string): Promise<{ id: string; name: string }> => {
  // The walk's admin key is the workspace's first.
  const { rows } = await svc.rt.deps.db.query<{ id: string; name: string }>(
    'SELECT id, name FROM api_keys WHERE workspace_id = $1 ORDER BY seq LIMIT 1',
    [workspaceId],
  );
  return rows[0]!;
};

describe('the route walk', () => {
  it('walks the routes that change state', () => {
    expect(walked.map(name)).toEqual(
      expect.arrayContaining(['POST /tenant/apikeys', 'DELETE /tenant/profiles/:id', 'POST /api/ingest']),
    );
  });

  it('names only existing routes in its fixtures', () => {
    const known = new Set(walked.map(name));
    expect(Object.keys(WALK_FIXTURES).filter((k) => !known.has(k))).toEqual([]);
  });
});

describe.each(walked.map((r) => [name(r), r] as const))(`%s (${ENGINE})`, (route, info) => {
  const decl = info.audit;

  if (decl !== null && !isAudited(decl)) {
    it('declares why it writes no audit entry', () => {
      expect(decl.exempt.length).toBeGreaterThan(10);
    });
    return;
  }

  it('writes one audit entry naming the action, principal, target and request', async () => {
    if (decl === null) {
      expect.fail(
        `${route} ${isExport(info) ? 'exports data' : 'changes state'} but declares no audit entry: add \`audit: { action: '<thing>.<verb>', target: '<kind>' }\` ` +
          `to its config (or \`audit: { exempt: '<why it needs none>' }\`; platform/http/audit.ts), ` +
          'and a fixture to test/audit-walk.fixtures.ts',
      );
    }
    const declared = decl as AuditedRoute;
    const fixture = WALK_FIXTURES[route];
    if (!fixture) {
      expect.fail(
        `no audit walk fixture for "${route}": add one to test/audit-walk.fixtures.ts ` +
          '(the format is described at the top of that file)',
      );
    }
    const req = await fixture(ctx);
    const res = await svc.call(info.method, req.url, {
      key: req.key === undefined ? ws.adminKey : req.key,
      body: req.body,
      headers: { 'user-agent': 'audit-walk/1.0', ...(req.headers ?? {}) },
    });
    expect(res.status, `the fixture's request should succeed: ${res.text}`).toBeLessThan(400);
    const requestId = String(res.headers['x-request-id']);

    const { rows } = await svc.rt.deps.db.query<EntryRow>('SELECT * FROM audit_log WHERE request_id = $1', [
      requestId,
    ]);
    expect(rows, `one entry with request id ${requestId}`).toHaveLength(1);
    const entry = rows[0]!;
    const workspaceId = req.workspace ? req.workspace(res) : ws.id;
    expect(entry).toMatchObject({
      workspace_id: workspaceId,
      action: declared.action,
      target_type: declared.target,
      target_id: typeof req.target === 'function' ? await req.target(res) : req.target,
      status: res.status,
      user_agent: 'audit-walk/1.0',
      client_ip: '127.0.0.1',
    });

    const principal = req.principal ?? { type: 'api_key' as const, keyOf: workspaceId };
    expect(entry.principal_type).toBe(principal.type);
    if (principal.type === 'operator') {
      expect([entry.key_id, entry.session_id]).toEqual([null, null]);
    } else {
      const key = await keyOf(workspaceId);
      expect({ key_id: entry.key_id, key_name: entry.key_name }).toEqual({
        key_id: key.id,
        key_name: key.name,
      });
      const sessionId =
        principal.type === 'session'
          ? typeof principal.sessionId === 'string'
            ? principal.sessionId
            : await principal.sessionId(res)
          : null;
      expect(entry.session_id).toBe(sessionId);
    }

    // No secret of the request or the answer is in the entry: keys, webhook secrets, the session's cookie.
    const text = JSON.stringify(entry);
    expect(text).not.toMatch(/cdp_[sp]k_|whsec_/);
    expect(text).not.toContain(OPERATOR_TOKEN);
    const cookie = /cdp_session=([^;]+)/.exec(
      String(res.headers['set-cookie'] ?? req.headers?.cookie ?? ''),
    )?.[1];
    if (cookie) expect(text).not.toContain(cookie);
    for (const value of req.absent ?? []) expect(text).not.toContain(value);
  });
});
