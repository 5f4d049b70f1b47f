import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db';
import { AppError } from '../../platform/errors';
import { iso } from '../../platform/http/envelope';
import { csrfTokenOf, type SessionGrant, type SessionLookup } from '../../platform/http/session-cookie';
import { newSortableId } from '../../platform/ids';
import { describeActiveKey, type KeyResolver } from '../api-keys';
import { findWorkspace } from '../workspaces';
import * as repo from './sessions.repo';

/** How long a session lives (docs/console.md, "Sessions"). */
export const SESSION_LIMITS = {
  /** Absolute lifetime from sign-in: 12 h. */
  absoluteS: 12 * 3600,
  /** Idle timeout: 30 min without a request ends it (sliding). */
  idleS: 30 * 60,
  /** The idle end is pushed forward at most this often (one write a minute per busy session). */
  touchEveryS: 60,
  /** Live sessions per key; signing in once more ends the oldest. */
  perKey: 50,
  /** Sign-in attempts per client address and minute. */
  signInsPerMinute: 30,
} as const;

/** The scopes a console can use: a key with none of them (ingest only) is refused at sign-in. */
const CONSOLE_SCOPES = ['admin', 'editor', 'viewer'];

export interface SessionView {
  workspace_id: string;
  workspace_name: string;
  key_id: string;
  key_name: string;
  scopes: string[];
  expires_at: string;
  idle_expires_at: string;
  csrf_token: string;
}

const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

const invalidKey = () => new AppError('INVALID_TENANT_KEY', 'API key is not valid for any workspace');

export interface SessionStore extends SessionLookup {
  /**
   * Exchanges a key for a new session: its token (the cookie's value), its id (ses_…, for the audit
   * trail) and what the console shows.
   */
  signIn(rawKey: string): Promise<{ token: string; sessionId: string; view: SessionView }>;
  /** The session of this token as the console shows it, or null when it has ended. */
  describe(token: string): Promise<SessionView | null>;
  /** Ends the session on the server (every instance: the row is gone). */
  signOut(token: string): Promise<void>;
}

/**
 * Console sessions, stored in `console_sessions` (one row per sign-in, only the token's hash). Every
 * request reads its row (a primary-key lookup: nothing is cached, so a sign-out or an expiry holds on
 * every instance at once) and checks its key through the key cache the API uses, whose revocation
 * protocol makes a revoked key fail on the next request everywhere: the session ends with it.
 */
export function createSessionStore(db: Db, keys: KeyResolver): SessionStore {
  const viewOf = (
    row: repo.SessionRow,
    scopes: readonly string[],
    workspaceName: string,
    token: string,
  ): SessionView => ({
    workspace_id: row.workspace_id,
    workspace_name: workspaceName,
    key_id: row.key_id,
    key_name: row.key_name,
    scopes: [...scopes],
    expires_at: iso(row.expires_at)!,
    idle_expires_at: iso(row.idle_expires_at)!,
    csrf_token: csrfTokenOf(token),
  });

  /** The live row and its key's current grant, touching the idle end when due; null if ended. */
  async function live(token: string) {
    const tokenHash = hashToken(token);
    const row = await repo.findLiveSession(db, tokenHash);
    if (!row) return null;
    const found = keys.resolveHash(row.key_hash);
    const key = found instanceof Promise ? await found : found;
    if (!key || key.id !== row.key_id) {
      // Revoked: the row goes now rather than at its expiry.
      await repo.deleteSession(db, tokenHash);
      return null;
    }
    if (row.idle_left_s < SESSION_LIMITS.idleS - SESSION_LIMITS.touchEveryS) {
      await repo.touchSession(db, tokenHash, SESSION_LIMITS.idleS);
    }
    return { row, key };
  }

  return {
    async resolve(token): Promise<SessionGrant | null> {
      const s = await live(token);
      if (!s) return null;
      return {
        sessionId: s.row.id,
        workspaceId: s.row.workspace_id,
        keyId: s.row.key_id,
        keyName: s.row.key_name,
        scopes: s.key.scopes,
        workspaceSettings: s.key.workspaceSettings,
      };
    },

    async signIn(rawKey) {
      const found = keys.resolve(rawKey);
      const key = found instanceof Promise ? await found : found;
      if (!key) throw invalidKey();
      if (!key.scopes.some((s) => CONSOLE_SCOPES.includes(s))) {
        throw new AppError(
          'INSUFFICIENT_SCOPE',
          `this key can only send events (scopes: ${key.scopes.join(', ')}); the console needs a key with the viewer, editor or admin scope`,
        );
      }
      const described = await describeActiveKey(db, rawKey);
      if (!described || described.id !== key.id) throw invalidKey();
      const workspace = await findWorkspace(db, key.workspaceId);
      if (!workspace) throw invalidKey();
      const token = randomBytes(32).toString('base64url');
      const row = await db.transaction(async (tx) => {
        const inserted = await repo.insertSession(tx, {
          tokenHash: hashToken(token),
          id: newSortableId('ses'),
          workspaceId: key.workspaceId,
          keyId: key.id,
          keyHash: described.hash,
          keyName: described.name,
          absoluteS: SESSION_LIMITS.absoluteS,
          idleS: SESSION_LIMITS.idleS,
        });
        await repo.capKeySessions(tx, key.id, SESSION_LIMITS.perKey);
        return inserted;
      });
      // Ended sessions go a few at a time with each sign-in (and with the maintenance task).
      await repo.pruneEndedSessions(db, 100);
      return { token, sessionId: row.id, view: viewOf(row, key.scopes, workspace.name, token) };
    },

    async describe(token) {
      const s = await live(token);
      if (!s) return null;
      const workspace = await findWorkspace(db, s.row.workspace_id);
      // Read again: the touch above may have moved the idle end.
      const row = (await repo.findLiveSession(db, s.row.token_hash)) ?? s.row;
      return viewOf(row, s.key.scopes, workspace?.name ?? '', token);
    },

    async signOut(token) {
      await repo.deleteSession(db, hashToken(token));
    },
  };
}

/** The maintenance task's work: ended sessions, in bounded statements. */
export async function pruneSessions(db: Db): Promise<void> {
  while ((await repo.pruneEndedSessions(db, 1000)) === 1000) {}
}
