import type { FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../../../test/expect-error';
import { startTestService, type TestService } from '../../../test/harness';
import { buildApp } from '../../app';
import { AppError } from '../errors';
import { type Principal, type PrincipalResolver, principalOf } from './principal';
import type { App } from './types';

/**
 * The resolver list is the only place a way of authenticating is added: a resolver written here,
 * for the test, is honoured by every route without any route knowing.
 */
let svc: TestService;
let app: App;
const calls: string[] = [];

/** A console-like session: `x-test-session: <name>` is a viewer of the default workspace. */
const testSessions = (): PrincipalResolver => ({
  name: 'test-session',
  stage: 'headers',
  hint: 'x-test-session header',
  async resolve(req) {
    calls.push('test-session');
    const name = req.headers['x-test-session'];
    if (name === undefined) return null;
    if (name !== 'ada') throw new AppError('INVALID_TENANT_KEY', 'no such session');
    return {
      kind: 'session',
      id: 'session-ada',
      userId: 'user-ada',
      workspaceId: svc.ws.id,
      scopes: ['viewer'],
      allowedDomains: [],
      workspaceSettings: {},
    } satisfies Principal;
  },
});

/** Records that it ran, finds nothing. */
const spy = (name: string): PrincipalResolver => ({
  name,
  stage: 'headers',
  hint: name,
  async resolve() {
    calls.push(name);
    return null;
  },
});

beforeAll(async () => {
  svc = await startTestService();
  app = await buildApp({
    ...svc.rt.deps,
    principals: [spy('first'), testSessions(), ...svc.rt.deps.principals, spy('last')],
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await svc?.close();
});

const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers });
const reply = (res: Awaited<ReturnType<typeof get>>) => ({
  status: res.statusCode,
  headers: res.headers,
  body: res.json(),
  text: res.body,
});

describe('pluggable principal resolvers', () => {
  it('admits a principal from a resolver the routes know nothing about, within its scopes', async () => {
    const list = await get('/tenant/profiles?limit=1', { 'x-test-session': 'ada' });
    expect(list.statusCode, list.body).toBe(200);
    // Rate limits count the principal.
    expect(list.headers['ratelimit-limit']).toBeDefined();
    expectError(reply(await get('/tenant/apikeys', { 'x-test-session': 'ada' })), 403, 'INSUFFICIENT_SCOPE');
  });

  it('runs the resolvers in their configured order, every one of them', async () => {
    calls.length = 0;
    await get('/tenant/profiles?limit=1', { 'x-api-key': svc.ws.adminKey });
    expect(calls).toEqual(['first', 'test-session', 'last']);
  });

  it('refuses a bad credential of any resolver even beside a good key', async () => {
    const res = await get('/tenant/profiles', { 'x-test-session': 'bob', 'x-api-key': svc.ws.adminKey });
    expectError(reply(res), 401, 'INVALID_TENANT_KEY');
  });

  it('refuses two principals that disagree', async () => {
    const res = await get('/tenant/profiles', { 'x-test-session': 'ada', 'x-api-key': svc.ws.adminKey });
    expectError(reply(res), 401, 'INVALID_TENANT_KEY');
  });

  it('names every applicable way in MISSING_API_KEY', async () => {
    const res = reply(await get('/tenant/profiles', {}));
    expectError(res, 401, 'MISSING_API_KEY');
    expect(res.body.message).toBe('first, x-test-session header, X-API-Key header or last is required');
  });

  it('keeps the standard wiring unchanged: X-API-Key alone on non-ingest routes', async () => {
    const res = await svc.call('GET', '/tenant/profiles', { key: null });
    expect(res.body.message).toBe('X-API-Key header is required');
  });
});

describe('principalOf', () => {
  it('fails loudly on a request the auth hook did not admit (a programming error, not a 401)', () => {
    const req = {
      principal: null,
      method: 'GET',
      routeOptions: { url: '/health' },
    } as unknown as FastifyRequest;
    expect(() => principalOf(req)).toThrow(/no principal on GET \/health/);
  });
});
