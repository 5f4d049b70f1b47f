import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { consoleHousekeeping } from './housekeeping';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

describe('console housekeeping', () => {
  it('deletes ended sessions and event counts older than two hours, and keeps the rest', async () => {
    const db = svc.rt.deps.db;
    const live = await svc.call('POST', '/tenant/session', { key: null, body: { api_key: svc.ws.adminKey } });
    expect(live.status).toBe(201);
    await db.query(
      `INSERT INTO console_sessions (token_hash, id, workspace_id, key_id, key_hash, key_name, expires_at, idle_expires_at)
       VALUES ('ended', 'ses_ended', $1, 'key_x', 'h', 'n', now(), now() - interval '1 minute')`,
      [svc.ws.id],
    );
    await db.query(
      `INSERT INTO event_minutes (workspace_id, minute, shard, count)
       VALUES ($1, date_trunc('minute', now()) - interval '3 hours', 0, 7), ($1, date_trunc('minute', now()), 1, 3)`,
      [svc.ws.id],
    );
    await consoleHousekeeping().run(db, new AbortController().signal);
    const sessions = await db.query<{ id: string }>('SELECT id FROM console_sessions');
    expect(sessions.rows.map((r) => r.id)).not.toContain('ses_ended');
    expect(sessions.rows).toHaveLength(1);
    const minutes = await db.query<{ count: number }>(
      'SELECT count FROM event_minutes WHERE workspace_id = $1',
      [svc.ws.id],
    );
    expect(minutes.rows.map((r) => r.count)).toEqual([3]);
  });
});
