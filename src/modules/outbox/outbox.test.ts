import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onlyOn } from '../../../test/skips';
import type { Db } from '../../platform/db';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import { OUTBOX_START, type OutboxCursor, readOutbox, writeOutbox, writeOutboxMany } from './outbox.repo';

let t: TestDb;
let db: Db;
let ws: string;

beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
  ws = randomUUID();
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'outbox test']);
});
afterAll(() => t.close());

/** Reads everything there is now, in batches of `limit`, as a consumer would; returns the ids and the cursor. */
async function drain(cursor: OutboxCursor, limit: number): Promise<{ ids: string[]; cursor: OutboxCursor }> {
  const ids: string[] = [];
  for (;;) {
    const r = await db.transaction((tx) => readOutbox(tx, ws, cursor, limit));
    ids.push(...r.facts.map((f) => f.id));
    cursor = r.cursor;
    if (r.facts.length < limit) return { ids, cursor };
  }
}

describe('the outbox reader', () => {
  it('reads every committed fact once, in the order written, whatever the batch size', async () => {
    const written: string[] = [];
    for (let i = 0; i < 7; i++) {
      const facts = Array.from({ length: i + 1 }, (_, k) => ({
        workspaceId: ws,
        type: 'profile.created' as const,
        data: { i, k },
      }));
      written.push(...(await db.transaction((tx) => writeOutboxMany(tx, facts))));
    }
    for (const limit of [1, 3, 100]) {
      const first = await drain(OUTBOX_START, limit);
      expect(first.ids).toEqual(written);
      const again = await drain(first.cursor, limit);
      expect(again.ids).toEqual([]);
    }
  });

  // PGlite runs one transaction at a time: no fact can commit out of order there.
  onlyOn('postgres', 'needs two transactions at once').it(
    'reads a fact whose transaction commits after later facts were read, and never twice',
    async () => {
      const other = await t.other();
      const start = (await drain(OUTBOX_START, 100)).cursor;
      let commit!: () => void;
      const held = new Promise<void>((r) => {
        commit = r;
      });
      let slowId = '';
      let inserted!: () => void;
      const insertedP = new Promise<void>((r) => {
        inserted = r;
      });
      // A slow transaction takes its fact's seq first and stays open...
      const slow = other.transaction(async (tx) => {
        slowId = await writeOutbox(tx, ws, 'order.completed', { slow: true });
        inserted();
        await held;
      });
      await insertedP;
      // ...while a quick one commits a fact with a higher seq, which is read.
      const quickId = await db.transaction((tx) => writeOutbox(tx, ws, 'order.completed', { quick: true }));
      const before = await drain(start, 100);
      expect(before.ids).toEqual([quickId]);
      // The slow fact commits behind the cursor's seq, and is read next, once.
      commit();
      await slow;
      const after = await drain(before.cursor, 100);
      expect(after.ids).toEqual([slowId]);
      expect((await drain(after.cursor, 100)).ids).toEqual([]);
    },
  );
});
