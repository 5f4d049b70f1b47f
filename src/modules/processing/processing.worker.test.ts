import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import type { Db, Queryable } from '../../platform/db';
import { createLogger } from '../../platform/logger';
import { isContention } from './processing.policy';
import { insertTestEvents, waitProcessed } from './processing.test-kit';
import { startProcessingLoop } from './processing.worker';

/**
 * The processing loop through a database outage, with the outage injected into the storage port:
 * whatever the number of failed attempts, an event that fails only because the database is away
 * is retried until it applies and never dead-lettered.
 */
let svc: TestService;
beforeAll(async () => {
  // ROLE=api: no worker of the service's own; each test runs the loop it checks.
  svc = await startTestService({ ROLE: 'api' });
});
afterAll(async () => svc?.close());

const connectionRefused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const connectionLost = () => new Error('Connection terminated unexpectedly');

/**
 * The service's database, except that the first `failures` transactions fail: every other one
 * before it starts (connection refused), the others after their events were claimed (connection
 * lost mid-batch), the case that used to send good events to the dead letters.
 */
function failingDb(db: Db, failures: number): Db & { failed(): number } {
  let failed = 0;
  return {
    engine: db.engine,
    laneName: 'foreground',
    foregroundSeenAt: () => Number.NEGATIVE_INFINITY,
    interactiveSeenAt: () => Number.NEGATIVE_INFINITY,
    lane() {
      return this;
    },
    query: (sql, params) => db.query(sql, params),
    exec: (sql) => db.exec(sql),
    listen: (channel, handler, onLost) => db.listen(channel, handler, onLost),
    get listening() {
      return db.listening;
    },
    close: () => db.close(),
    failed: () => failed,
    async transaction(fn) {
      if (failed >= failures) return db.transaction(fn);
      failed++;
      if (failed % 2 === 1) throw connectionRefused();
      return db.transaction(async (tx) => {
        let statements = 0;
        const broken: Queryable = {
          async query(sql, params) {
            // The first two statements claim the batch; the connection dies right after.
            if (++statements > 2) throw connectionLost();
            return tx.query(sql, params);
          },
          exec: (sql) => tx.exec(sql),
        };
        return fn(broken);
      });
    },
  };
}

describe('the processing loop during a database outage', () => {
  it('retries through 40 failed attempts and dead-letters nothing', async () => {
    const db = svc.rt.deps.db;
    const ids = await insertTestEvents(
      db,
      svc.ws.id,
      Array.from({ length: 5 }, (_, i) => ({
        identity: `outage-${i}@example.com`,
        event_type: 'identify' as const,
        event_name: 'Signed Up',
        payload: { n: i },
      })),
    );
    const flaky = failingDb(db, 40);
    const loop = await startProcessingLoop(flaky, createLogger('silent'), {
      batchSize: 10,
      maxAttempts: 3,
      maxOutageBackoffMs: 5,
    });
    try {
      await waitProcessed(db, 30_000);
    } finally {
      await loop.stop();
    }
    expect(flaky.failed()).toBe(40);
    const dead = await db.query('SELECT reason FROM dead_letters WHERE workspace_id = $1', [svc.ws.id]);
    expect(dead.rows).toEqual([]);
    const applied = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events e JOIN event_profiles a ON a.seq = e.seq WHERE e.id = ANY($1::text[])',
      [ids],
    );
    expect(applied.rows[0]!.n).toBe(5);
  });

  it('tells contention (retried as a batch, then isolated) from an outage (retried forever)', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    for (const c of ['40001', '40P01', '55P03', '23505']) expect(isContention(withCode(c)), c).toBe(true);
    for (const c of ['08006', '57P01', 'ECONNRESET', '42P01'])
      expect(isContention(withCode(c)), c).toBe(false);
    expect(isContention(connectionLost())).toBe(false);
  });
});

describe('the processing loop beside requests', () => {
  /** The service's database, reporting foreground work at the moment given (null: none ever). */
  const withRequestsAt = (db: Db, at: () => number): Db =>
    Object.create(db, { foregroundSeenAt: { value: at } });

  /** The sizes of the batches the loop claims while it works through `n` events. */
  async function batchSizes(db: Db, n: number, share: boolean): Promise<number[]> {
    await insertTestEvents(
      svc.rt.deps.db,
      svc.ws.id,
      Array.from({ length: n }, (_, i) => ({
        anonymous_id: `bbbbbbbb-0000-4000-8000-${String(i).padStart(12, '0')}`,
        event_type: 'track' as const,
        event_name: 'Viewed',
      })),
    );
    const sizes: number[] = [];
    const log = createLogger('debug', {
      write(line: string) {
        const entry = JSON.parse(line) as { msg?: string; claimed?: number };
        if (entry.msg === 'event batch' && entry.claimed) sizes.push(entry.claimed);
      },
    });
    const loop = await startProcessingLoop(db, log, {
      batchSize: 200,
      ...(share ? { shareWithRequests: 15 } : {}),
    });
    try {
      await waitProcessed(svc.rt.deps.db, 60_000);
    } finally {
      await loop.stop();
    }
    return sizes;
  }

  it('takes full batches when no request was served lately', async () => {
    const db = withRequestsAt(svc.rt.deps.db, () => Number.NEGATIVE_INFINITY);
    expect(Math.max(...(await batchSizes(db, 400, true)))).toBe(200);
  });

  it('sizes its batches down to about the target while requests are being served', async () => {
    const db = withRequestsAt(svc.rt.deps.db, () => performance.now());
    const sizes = await batchSizes(db, 400, true);
    // The first batch is the sizer's starting guess; every later one follows the measured time.
    expect(sizes[0]).toBe(50);
    expect(Math.max(...sizes)).toBeLessThan(200);
  });
});

describe('the processing loop and the other claimers', () => {
  /** The service's database, keeping the text of every statement its transactions run. */
  function recordingDb(db: Db): Db & { statements: string[] } {
    const statements: string[] = [];
    return Object.create(db, {
      statements: { value: statements },
      transaction: {
        value: (fn: (tx: Queryable) => Promise<unknown>, opts?: unknown) =>
          db.transaction(
            (tx) =>
              fn({
                query: (sql: string, params?: unknown[]) => {
                  statements.push(sql);
                  return tx.query(sql, params);
                },
                exec: (sql: string) => tx.exec(sql),
              } as Queryable),
            opts as never,
          ),
      },
    });
  }

  /** Whether a loop of `loops` loops looked for older events other claimers hold (the order guard). */
  async function looksForOthers(loops: number): Promise<boolean> {
    await insertTestEvents(svc.rt.deps.db, svc.ws.id, [
      { anonymous_id: crypto.randomUUID(), event_type: 'page', event_name: 'Home' },
    ]);
    const db = recordingDb(svc.rt.deps.db);
    const loop = await startProcessingLoop(db, createLogger('silent'), { batchSize: 10, concurrency: loops });
    try {
      await waitProcessed(svc.rt.deps.db);
    } finally {
      await loop.stop();
    }
    return db.statements.some((sql) => /FROM event_backlog\s+WHERE seq < \$1/.test(sql));
  }

  it('looks for older events held elsewhere only where another claimer can exist', async () => {
    // PGlite is one process on one connection: one loop is the only claimer there can be.
    expect(await looksForOthers(1)).toBe(svc.rt.deps.db.engine === 'postgres');
    expect(await looksForOthers(2)).toBe(true);
  });
});
