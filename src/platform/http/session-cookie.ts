import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import type { MaybePromise, Principal, PrincipalResolver } from './principal';

/** The console's session cookie (docs/console.md, "Sessions"). */
export const SESSION_COOKIE = 'cdp_session';
/** The header every state-changing request authenticated by the cookie must carry. */
export const CSRF_HEADER = 'x-csrf-token';

/** A session token: 32 random bytes, base64url (43 characters). Anything else is not looked up. */
export const SESSION_TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The CSRF token of a session, derived from its secret token: nothing more to store, the server
 * recomputes it from the cookie on every request, and a page that cannot read the cookie (HttpOnly)
 * learns it only from `GET /tenant/session` (same origin).
 */
export const csrfTokenOf = (sessionToken: string): string =>
  createHash('sha256').update(`cdp-csrf:${sessionToken}`).digest('base64url');

/** What a session store knows about a live session (implemented by modules/console). */
export interface SessionGrant {
  sessionId: string;
  workspaceId: string;
  keyId: string;
  keyName: string;
  /** The key's scopes now (from the key cache: a revoked key ends the session). */
  scopes: readonly string[];
  workspaceSettings: Readonly<Record<string, unknown>>;
}

/** The port the session resolver needs: raw cookie token → the live session, or null. */
export interface SessionLookup {
  resolve(token: string): MaybePromise<SessionGrant | null>;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const sameText = (a: string, b: string): boolean => {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
};

export const sessionEnded = () =>
  new AppError(
    'INVALID_SESSION',
    'the console session has ended (signed out, expired, or its key was revoked); sign in again',
  );

const SESSION_COOKIE_VALUE = new RegExp(`(?:^|;\\s*)${SESSION_COOKIE}=([^;]*)`);

/**
 * The raw session token of a request, or null. Only this one cookie is read, and only from requests
 * that carry a Cookie header: parsing every request's cookies in a hook would cost the ingest path
 * (API clients send none) for nothing.
 */
export function sessionTokenOf(req: FastifyRequest): string | null {
  const header = req.headers.cookie;
  if (header === undefined) return null;
  const raw = SESSION_COOKIE_VALUE.exec(header)?.[1];
  return raw === undefined || raw === '' ? null : raw.trim();
}

function asPrincipal(g: SessionGrant | null, req: FastifyRequest, token: string): Principal {
  if (!g) throw sessionEnded();
  if (!SAFE_METHODS.has(req.method)) {
    const sent = req.headers[CSRF_HEADER];
    if (typeof sent !== 'string' || !sameText(sent, csrfTokenOf(token))) {
      throw new AppError(
        'CSRF_TOKEN_INVALID',
        `a request signed in with the console's session must send the session's ${CSRF_HEADER} header (GET /tenant/session answers it)`,
      );
    }
  }
  return {
    kind: 'session',
    // Rate limits count against the key: a session shares its key's budget.
    id: g.keyId,
    keyId: g.keyId,
    keyName: g.keyName,
    sessionId: g.sessionId,
    workspaceId: g.workspaceId,
    scopes: g.scopes,
    // The cookie is SameSite=Strict and state changes need the CSRF header: the console's origin is
    // the only one that can use a session, so the key's domain list does not apply.
    allowedDomains: [],
    workspaceSettings: g.workspaceSettings,
  };
}

/**
 * The console's session cookie as a principal, on every key-protected route, with the key's scopes.
 * A request that carries a key (X-API-Key, Authorization) is authenticated by the key alone: the
 * cookie a browser sends along is then ignored, so API calls from a signed-in browser tab behave
 * exactly as they would anywhere else. Unnamed in "… is required": API clients never send it.
 */
export function sessionCookie(sessions: SessionLookup): PrincipalResolver {
  return {
    name: 'session-cookie',
    stage: 'headers',
    hint: '',
    resolve(req) {
      if (req.headers['x-api-key'] !== undefined || req.headers.authorization !== undefined) return null;
      const token = sessionTokenOf(req);
      if (token === null) return null;
      if (!SESSION_TOKEN_SHAPE.test(token)) throw sessionEnded();
      const g = sessions.resolve(token);
      return g instanceof Promise ? g.then((s) => asPrincipal(s, req, token)) : asPrincipal(g, req, token);
    },
  };
}
