import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, toEnvelope } from '../errors';
import type { App } from './types';

/**
 * The audit trail's side of HTTP (docs/architecture.md, "The audit trail"). A route says in its
 * `config` what it does, in one line:
 *
 *   config: { auth: 'admin', audit: { action: 'apikey.revoke', target: 'api_key' } }
 *
 * or why it writes no entry:
 *
 *   config: { auth: 'ingest', audit: { exempt: INGEST_EXEMPTION } }
 *
 * Every request of an audited route that reached its handler gets one entry, written before the
 * answer leaves (onSend): an acknowledged change is always in the trail. The platform only gathers
 * the facts of the request; the sink (modules/audit, wired by the composition root) redacts and
 * stores them.
 */

/** Where the target's id comes from; by default the route's last path parameter, else the answer's `data.id`. */
export type TargetIdSource = 'workspace' | 'none' | `param.${string}` | `answer.${string}` | `body.${string}`;

export interface AuditedRoute {
  /** A stable dotted name, `<what>.<verb>`: `apikey.create`, `profile.erase`, `export.events`. */
  action: string;
  /** The kind of thing acted on: `api_key`, `profile`, `segment`, `workspace`, … */
  target: string;
  /**
   * Where its id is: `workspace` (the workspace itself), `param.<name>`, `answer.<path>` (in the
   * answer's `data`, e.g. `answer.fit_id`) or `body.<path>`; `none` when the id must not be kept
   * (a suppressed identifier is a person's e-mail or phone).
   */
  id?: TargetIdSource;
}

/** A route that writes no entry, and why (the route-walk test reads the reason). */
export interface AuditExemption {
  exempt: string;
}

export type AuditDeclaration = AuditedRoute | AuditExemption;

/** The reason every ingest route gives: the event log is their record. */
export const INGEST_EXEMPTION =
  'ingest: the event log records every event with the key that sent it (api_key_id); an entry per request would cost ingest throughput';

export const isAudited = (d: AuditDeclaration | undefined): d is AuditedRoute =>
  d !== undefined && 'action' in d;

const ACTION_SHAPE = /^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/;
const TARGET_SHAPE = /^[a-z][a-z_]*$/;

/** A malformed declaration is a programming error: the route registry refuses it at start. */
export function checkDeclaration(route: string, d: AuditDeclaration): void {
  if ('exempt' in d) {
    if (typeof d.exempt !== 'string' || d.exempt.trim().length < 10) {
      throw new Error(`route ${route}: an audit exemption must say why (config.audit.exempt)`);
    }
    return;
  }
  if (!ACTION_SHAPE.test(d.action)) {
    throw new Error(`route ${route}: audit action "${d.action}" is not a dotted name like apikey.create`);
  }
  if (!TARGET_SHAPE.test(d.target)) {
    throw new Error(`route ${route}: audit target "${d.target}" is not a snake_case name like api_key`);
  }
  if (d.id !== undefined && !/^(workspace|none|(param|answer|body)\.[A-Za-z0-9_.]+)$/.test(d.id)) {
    throw new Error(`route ${route}: audit id "${d.id}" is not workspace, none, param.x, answer.x or body.x`);
  }
}

/** Who did it, as the entry records it. */
export type AuditActor =
  | { type: 'api_key'; keyId: string; keyName: string | null }
  | { type: 'session'; sessionId: string; keyId: string; keyName: string | null }
  | { type: 'operator' };

/** Limits of what an entry keeps of the request (docs/api.md, "Audit log"). */
export const AUDIT_LIMITS = {
  /** The user agent is cut to this many characters. */
  userAgentChars: 256,
  /** A target id longer than this is cut (ids are far shorter; a path parameter may be anything). */
  targetIdChars: 200,
} as const;

/** What the sink receives: the facts of one audited request. */
export interface AuditRecord {
  workspaceId: string;
  at: Date;
  actor: AuditActor;
  action: string;
  target: { type: string; id: string | null };
  /** `{before, after}` where the handler said, else `{request: {body?, query?}}`; not yet redacted. */
  diff: Record<string, unknown>;
  requestId: string;
  clientIp: string | null;
  userAgent: string | null;
  status: number;
}

export interface AuditSink {
  /** Stores the entry durably (committed when the promise resolves). */
  write(record: AuditRecord): Promise<void>;
}

/** What a handler may add to its request's entry (all optional). */
export interface AuditNote {
  /** For a route whose caller has no principal yet (a sign-in), or creates a workspace. */
  workspaceId?: string;
  actor?: AuditActor;
  targetId?: string | null;
  /** The thing before and after the change, where the handler knows both. */
  before?: unknown;
  after?: unknown;
}

interface AuditContext {
  route: AuditedRoute;
  note: AuditNote;
  /** The answer object, as it went to serialization (for `answer.<path>` ids). */
  answer: unknown;
  written: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The audit entry the route writes, or why it writes none (platform/http/audit.ts). */
    audit?: AuditDeclaration;
  }
  interface FastifyRequest {
    /** Set for requests of audited routes that reached their handler; read through `noteAudit`. */
    auditContext: AuditContext | null;
  }
}

/** Adds facts to the request's entry; a no-op on routes that are not audited. */
export function noteAudit(req: FastifyRequest, note: AuditNote): void {
  if (req.auditContext) Object.assign(req.auditContext.note, note);
}

const pathValue = (root: unknown, path: readonly string[]): unknown => {
  let v = root;
  for (const part of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
};

function targetIdOf(req: FastifyRequest, ctx: AuditContext, workspaceId: string): string | null {
  if (ctx.note.targetId !== undefined) return ctx.note.targetId;
  let source = ctx.route.id;
  if (source === undefined) {
    const params = [...(req.routeOptions.url ?? '').matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
    source = params.length > 0 ? `param.${params.at(-1)!}` : 'answer.id';
  }
  if (source === 'workspace') return workspaceId;
  if (source === 'none') return null;
  const [where, ...path] = source.split('.');
  const root = where === 'param' ? req.params : where === 'body' ? req.body : pathValue(ctx.answer, ['data']);
  const v = pathValue(root, path);
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  return String(v).slice(0, AUDIT_LIMITS.targetIdChars);
}

function actorOf(req: FastifyRequest, ctx: AuditContext): AuditActor | null {
  if (ctx.note.actor) return ctx.note.actor;
  const p = req.principal;
  if (p) {
    const keyId = p.keyId ?? p.id;
    const keyName = p.keyName ?? null;
    return p.kind === 'session' && p.sessionId
      ? { type: 'session', sessionId: p.sessionId, keyId, keyName }
      : { type: 'api_key', keyId, keyName };
  }
  const auth = req.routeOptions.config.auth;
  return auth === 'operator' || auth === 'local' ? { type: 'operator' } : null;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Only what changed between `before` and `after`, field by field (nested objects compared the same
 * way), so that a settings change records the values that moved, not the whole document twice.
 */
export function changedFields(before: unknown, after: unknown): { before: unknown; after: unknown } {
  if (!isPlainObject(before) || !isPlainObject(after)) return { before, after };
  const b: Record<string, unknown> = {};
  const a: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (JSON.stringify(before[k]) === JSON.stringify(after[k])) continue;
    const inner = changedFields(before[k], after[k]);
    b[k] = inner.before ?? null;
    a[k] = inner.after ?? null;
  }
  return { before: b, after: a };
}

function diffOf(req: FastifyRequest, ctx: AuditContext): Record<string, unknown> {
  if (ctx.note.before !== undefined || ctx.note.after !== undefined) {
    return changedFields(ctx.note.before ?? null, ctx.note.after ?? null);
  }
  const request: Record<string, unknown> = {};
  if (req.body !== undefined && req.body !== null) request.body = req.body;
  const query = req.query as Record<string, unknown> | undefined;
  if (query && typeof query === 'object' && Object.keys(query).length > 0) request.query = query;
  return { request };
}

/** The facts of the request, or null when no workspace or principal can be named. */
export function recordOf(req: FastifyRequest, status: number, at = new Date()): AuditRecord | null {
  const ctx = req.auditContext;
  if (!ctx) return null;
  const workspaceId = ctx.note.workspaceId ?? req.principal?.workspaceId;
  const actor = actorOf(req, ctx);
  if (!workspaceId || !actor) return null;
  const ua = req.headers['user-agent'];
  return {
    workspaceId,
    at,
    actor,
    action: ctx.route.action,
    target: { type: ctx.route.target, id: targetIdOf(req, ctx, workspaceId) },
    diff: diffOf(req, ctx),
    requestId: req.id,
    clientIp: req.ip ?? null,
    userAgent: typeof ua === 'string' ? ua.slice(0, AUDIT_LIMITS.userAgentChars) : null,
    status,
  };
}

/**
 * Writes the entry of a request whose answer leaves without the onSend hook (a hijacked stream: a
 * workspace export), before its first byte: the entry the hook would write, once. When it cannot be
 * written the request is refused with 503, as the hook turns a success into one; the error answer
 * then writes nothing more.
 */
export async function writeAuditEntry(req: FastifyRequest, sink: AuditSink, status: number): Promise<void> {
  const ctx = req.auditContext;
  if (!ctx || ctx.written) return;
  ctx.written = true;
  const record = recordOf(req, status);
  if (!record) return;
  try {
    await sink.write(record);
  } catch (err) {
    req.log.error({ err, action: record.action, status }, 'audit entry could not be written');
    throw new AppError(
      'UNAVAILABLE',
      'the request could not be recorded in the audit log, so it is not answered; retry',
      { headers: { 'retry-after': '1' } },
    );
  }
}

/**
 * The three hooks of the trail, added to the audited routes only (an ingest request pays nothing
 * for them). preHandler opens the entry of a request that passed authentication and validation
 * (refusals before it write none: docs/api.md, "Audit log"); preSerialization keeps the answer for
 * ids only it knows (a created resource's); onSend writes the entry before the answer leaves. An
 * entry that cannot be written turns a success into 503: the change may have been made, but it is
 * not acknowledged unaudited. Call before any route is registered.
 */
export function installAuditHooks(app: App, sink: AuditSink): void {
  app.decorateRequest('auditContext', null);

  const open = (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    req.auditContext = {
      route: req.routeOptions.config.audit as AuditedRoute,
      note: {},
      answer: undefined,
      written: false,
    };
    done();
  };

  const keepAnswer = (
    req: FastifyRequest,
    _reply: FastifyReply,
    payload: unknown,
    done: (err: null, payload: unknown) => void,
  ) => {
    if (req.auditContext) req.auditContext.answer = payload;
    done(null, payload);
  };

  const write = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const ctx = req.auditContext;
    if (!ctx || ctx.written) return payload;
    ctx.written = true;
    const status = reply.statusCode;
    const record = recordOf(req, status);
    if (!record) {
      // A request no workspace can be named for (a console sign-in with a key that exists nowhere):
      // the instance's log is its record, never a tenant's trail.
      req.log.warn(
        {
          action: ctx.route.action,
          status,
          ip: req.ip,
          userAgent: req.headers['user-agent']?.slice(0, AUDIT_LIMITS.userAgentChars),
        },
        'audited request names no workspace: logged only',
      );
      return payload;
    }
    try {
      await sink.write(record);
      return payload;
    } catch (err) {
      req.log.error({ err, action: record.action, status }, 'audit entry could not be written');
      if (status >= 400) return payload;
      (payload as { destroy?: () => void } | null)?.destroy?.();
      const refused = new AppError(
        'UNAVAILABLE',
        'the change could not be recorded in the audit log, so it is not acknowledged; it may have been applied: check before retrying',
        { headers: { 'retry-after': '1' } },
      );
      void reply.code(refused.status).headers(refused.headers!).type('application/json; charset=utf-8');
      return JSON.stringify(toEnvelope(refused, req.id));
    }
  };

  const append = <T>(existing: T | T[] | undefined, hook: T): T[] =>
    existing === undefined ? [hook] : Array.isArray(existing) ? [...existing, hook] : [existing, hook];
  // First of the route's own: a request its own preHandler refuses has reached the route.
  const prepend = <T>(existing: T | T[] | undefined, hook: T): T[] =>
    existing === undefined ? [hook] : Array.isArray(existing) ? [hook, ...existing] : [hook, existing];

  app.addHook('onRoute', (route) => {
    if (!isAudited((route.config as { audit?: AuditDeclaration } | undefined)?.audit)) return;
    route.preHandler = prepend(route.preHandler, open) as typeof route.preHandler;
    route.preSerialization = append(route.preSerialization, keepAnswer) as typeof route.preSerialization;
    route.onSend = append(route.onSend, write) as typeof route.onSend;
  });
}
