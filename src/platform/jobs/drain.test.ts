import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../db/port';
import { workspaceDrain } from './drain';
import { openTestDb, type TestDb } from './jobs.test-kit';

let t: TestDb;
let db: Db;
beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
});
afterAll(() => t.close());

let n = 0;
/** A workspace row (jobs name theirs). */
async function newWorkspace(): Promise<string> {
  const id = randomUUID();
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [id, 'drain test']);
  return id;
}
const queued = async (queue: string) =>
  (
    await db.query<{ key: string; delayed: boolean }>(
      `SELECT key, run_at > now() AS delayed FROM jobs WHERE queue = $1 AND state = 'queued' ORDER BY key`,
      [queue],
    )
  ).rows;

describe('a per-workspace drain queue', () => {
  it('makes one job of many enqueues for a workspace', async () => {
    const d = workspaceDrain(`drain${++n}`);
    const ws = await newWorkspace();
    for (let i = 0; i < 3; i++) await d.enqueue(db, ws);
    expect(await queued(d.queue)).toEqual([{ key: `ws:${ws}`, delayed: false }]);
  });

  it('follows a finished job with a delayed look under a second key', async () => {
    const d = workspaceDrain(`drain${++n}`, { followUpMs: 60_000 });
    const ws = await newWorkspace();
    await d.settle(db, { key: `ws:${ws}` }, ws, { done: true, worked: true });
    expect(await queued(d.queue)).toEqual([{ key: `ws:${ws}:next`, delayed: true }]);
  });

  it('follows a job that ran out of budget at once', async () => {
    const d = workspaceDrain(`drain${++n}`, { followUpMs: 60_000 });
    const ws = await newWorkspace();
    await d.settle(db, { key: `ws:${ws}` }, ws, { done: false, worked: true });
    expect(await queued(d.queue)).toEqual([{ key: `ws:${ws}:next`, delayed: false }]);
  });

  it('hands a follow-up that found work on to an ordinary job, and ends one that found none', async () => {
    const d = workspaceDrain(`drain${++n}`);
    const [busy, idle] = [await newWorkspace(), await newWorkspace()];
    await d.settle(db, { key: `ws:${busy}:next` }, busy, { done: true, worked: true });
    await d.settle(db, { key: `ws:${idle}:next` }, idle, { done: true, worked: false });
    expect(await queued(d.queue)).toEqual([{ key: `ws:${busy}`, delayed: false }]);
  });
});
