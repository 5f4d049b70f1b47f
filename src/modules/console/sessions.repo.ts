import type { Queryable } from '../../platform/db';

export interface SessionRow {
  token_hash: string;
  id: string;
  workspace_id: string;
  key_id: string;
  key_hash: string;
  key_name: string;
  created_at: Date;
  expires_at: Date;
  idle_expires_at: Date;
  /** Seconds until the idle end, at the time of the read. */
  idle_left_s: number;
}

const COLUMNS = `token_hash, id, workspace_id, key_id, key_hash, key_name, created_at, expires_at, idle_expires_at,
  extract(epoch FROM idle_expires_at - now())::float8 AS idle_left_s`;

export async function insertSession(
  q: Queryable,
  s: {
    tokenHash: string;
    id: string;
    workspaceId: string;
    keyId: string;
    keyHash: string;
    keyName: string;
    absoluteS: number;
    idleS: number;
  },
): Promise<SessionRow> {
  const { rows } = await q.query<SessionRow>(
    `INSERT INTO console_sessions (token_hash, id, workspace_id, key_id, key_hash, key_name, expires_at, idle_expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7), now() + make_interval(secs => least($7, $8)))
     RETURNING ${COLUMNS}`,
    [s.tokenHash, s.id, s.workspaceId, s.keyId, s.keyHash, s.keyName, s.absoluteS, s.idleS],
  );
  return rows[0]!;
}

/** The live session with this token hash (neither idle nor past its absolute end), or null. */
export async function findLiveSession(q: Queryable, tokenHash: string): Promise<SessionRow | null> {
  const { rows } = await q.query<SessionRow>(
    `SELECT ${COLUMNS} FROM console_sessions WHERE token_hash = $1 AND idle_expires_at > now()`,
    [tokenHash],
  );
  return rows[0] ?? null;
}

/** Pushes the idle end forward, never past the absolute end. */
export async function touchSession(q: Queryable, tokenHash: string, idleS: number): Promise<void> {
  await q.query(
    `UPDATE console_sessions SET idle_expires_at = least(expires_at, now() + make_interval(secs => $2))
      WHERE token_hash = $1`,
    [tokenHash, idleS],
  );
}

export async function deleteSession(q: Queryable, tokenHash: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM console_sessions WHERE token_hash = $1', [tokenHash]);
  return (rowCount ?? 0) > 0;
}

/** Keeps a key's newest `keep` sessions; older ones end. */
export async function capKeySessions(q: Queryable, keyId: string, keep: number): Promise<void> {
  await q.query(
    `DELETE FROM console_sessions WHERE key_id = $1 AND token_hash NOT IN (
       SELECT token_hash FROM console_sessions WHERE key_id = $1 ORDER BY created_at DESC LIMIT $2)`,
    [keyId, keep],
  );
}

/** Deletes up to `limit` ended sessions (idle or past their end); answers how many. */
export async function pruneEndedSessions(q: Queryable, limit: number): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM console_sessions WHERE token_hash IN (
       SELECT token_hash FROM console_sessions WHERE idle_expires_at <= now() ORDER BY idle_expires_at LIMIT $1)`,
    [limit],
  );
  return rowCount ?? 0;
}
