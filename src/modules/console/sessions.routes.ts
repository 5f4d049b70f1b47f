import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../platform/errors';
import { noteAudit } from '../../platform/http/audit';
import { applyRateHeaders, rateLimited } from '../../platform/http/auth-hook';
import { Envelope, ok } from '../../platform/http/envelope';
import { principalOf } from '../../platform/http/principal';
import { SESSION_COOKIE, sessionEnded, sessionTokenOf } from '../../platform/http/session-cookie';
import type { App, AppDeps } from '../../platform/http/types';
import { identifyKey } from '../api-keys';
import { SESSION_LIMITS, type SessionStore } from './sessions';

const tags = ['console'];

export const SessionSchema = Type.Object(
  {
    workspace_id: Type.String(),
    workspace_name: Type.String(),
    key_id: Type.String(),
    key_name: Type.String(),
    scopes: Type.Array(Type.String()),
    expires_at: Type.String({ format: 'date-time', description: 'Absolute end: 12 h after sign-in.' }),
    idle_expires_at: Type.String({
      format: 'date-time',
      description: 'Ends earlier after 30 min without a request (pushed forward by use).',
    }),
    csrf_token: Type.String({
      description: 'Send it as `X-CSRF-Token` with every POST, PUT, PATCH and DELETE made with the cookie.',
    }),
  },
  { $id: 'ConsoleSession' },
);

const SignInBody = Type.Object(
  { api_key: Type.String({ minLength: 1, maxLength: 200, description: 'The full secret of an API key.' }) },
  { additionalProperties: false },
);

/**
 * The session token of a request signed in with the cookie (the auth hook checked it); null for a
 * request authenticated by an API key, which has no session (the cookie is ignored then).
 */
function tokenOf(req: FastifyRequest): string | null {
  return principalOf(req).kind === 'session' ? sessionTokenOf(req) : null;
}

function setCookie(req: FastifyRequest, reply: FastifyReply, token: string, maxAgeS: number): void {
  void reply.setCookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    // req.protocol is `https` under TLS, or behind a trusted proxy that says so (X-Forwarded-Proto).
    secure: req.protocol === 'https',
    maxAge: maxAgeS,
  });
}

/** `/tenant/session`: sign in with a key, read the session, sign out (docs/console.md). */
export function registerSessionRoutes(app: App, deps: AppDeps & { sessions: SessionStore }): void {
  app.post(
    '/tenant/session',
    {
      // The key is in the body: no credential header. Attempts are limited per client address.
      config: { auth: 'public', rateTier: 'none', audit: { action: 'session.create', target: 'session' } },
      schema: {
        tags,
        security: [],
        summary:
          'Sign in to the console: exchange an API key for a session cookie (`cdp_session`, HttpOnly, SameSite=Strict).',
        body: SignInBody,
        response: { 201: Envelope(SessionSchema) },
      },
    },
    async (req, reply) => {
      const d = await deps.limits.consume(
        `console-sign-in:${req.ip}`,
        'standard',
        1,
        SESSION_LIMITS.signInsPerMinute,
      );
      applyRateHeaders(reply, d);
      if (!d.allowed) throw rateLimited(d.resetSeconds);
      let signedIn: Awaited<ReturnType<SessionStore['signIn']>>;
      try {
        signedIn = await deps.sessions.signIn(req.body.api_key);
      } catch (err) {
        // A refused sign-in is a security event: it goes to the trail of the key's workspace when
        // the key exists (revoked or ingest-only), else to the log (platform/http/audit.ts).
        const key = await identifyKey(deps.db, req.body.api_key).catch(() => null);
        if (key) {
          noteAudit(req, {
            workspaceId: key.workspaceId,
            actor: { type: 'api_key', keyId: key.id, keyName: key.name },
            targetId: null,
          });
        }
        throw err;
      }
      const { token, sessionId, view } = signedIn;
      noteAudit(req, {
        workspaceId: view.workspace_id,
        actor: { type: 'session', sessionId, keyId: view.key_id, keyName: view.key_name },
        targetId: sessionId,
      });
      setCookie(req, reply, token, SESSION_LIMITS.absoluteS);
      // The session is private to this browser.
      void reply.header('cache-control', 'no-store');
      return reply.code(201).send(ok(view));
    },
  );

  app.get(
    '/tenant/session',
    {
      config: { auth: 'read', rateTier: 'none' },
      schema: {
        tags,
        summary:
          'The console session of the cookie, with its CSRF token; 401 when it has ended (404 with an API key: no session).',
        response: { 200: Envelope(SessionSchema) },
      },
    },
    async (req, reply) => {
      const token = tokenOf(req);
      if (!token)
        throw new AppError('NOT_FOUND', 'no console session: this request was made with an API key');
      const view = await deps.sessions.describe(token);
      if (!view) throw sessionEnded();
      void reply.header('cache-control', 'no-store');
      return ok(view);
    },
  );

  app.delete(
    '/tenant/session',
    {
      config: { auth: 'read', rateTier: 'none', audit: { action: 'session.delete', target: 'session' } },
      schema: {
        tags,
        summary: 'Sign out: ends the session on the server and clears the cookie (needs `X-CSRF-Token`).',
        response: { 204: Type.Null() },
      },
    },
    async (req, reply) => {
      const token = tokenOf(req);
      noteAudit(req, { targetId: principalOf(req).sessionId ?? null });
      // With an API key there is no session to end: nothing to do, as after a second sign-out.
      if (token) await deps.sessions.signOut(token);
      setCookie(req, reply, '', 0);
      return reply.code(204).send(null);
    },
  );
}
