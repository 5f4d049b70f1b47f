import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { enqueue } from './jobs.repo';
import { openTestDb, type TestDb } from './jobs.test-kit';
import { listSchedules } from './jobs.view';
import { MAINTENANCE_QUEUE, pruneJobsTask, registerMaintenance } from './maintenance';
import { createJobRunner } from './runner';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(() => t.close());

describe('maintenance tasks', () => {
  it('run on their schedule as jobs of the maintenance queue; the job table prunes and vacuums itself', async () => {
    const { db } = t;
    const old = await enqueue(db, { queue: 'mail' });
    const dead = await enqueue(db, { queue: 'mail' });
    const fresh = await enqueue(db, { queue: 'mail' });
    await db.query(
      `UPDATE jobs SET state = 'succeeded', updated_at = now() - interval '2 days' WHERE id = $1;`,
      [old.id],
    );
    await db.query(`UPDATE jobs SET state = 'dead', updated_at = now() - interval '2 days' WHERE id = $1`, [
      dead.id,
    ]);

    const runner = createJobRunner({ db, pollMs: 20, scheduleEveryMs: 50 });
    let custom = 0;
    await registerMaintenance(runner, pruneJobsTask({ spec: 'every 1s' }));
    await registerMaintenance(runner, {
      name: 'count',
      spec: 'every 1s',
      run: async () => {
        custom++;
      },
    });
    await expect(
      registerMaintenance(runner, { name: 'count', spec: 'every 1s', run: async () => {} }),
    ).rejects.toThrow(/already registered/);
    expect((await listSchedules(db)).map((s) => [s.name, s.queue])).toEqual([
      ['maintenance:count', MAINTENANCE_QUEUE],
      ['maintenance:jobs.prune', MAINTENANCE_QUEUE],
    ]);
    runner.start();
    await waitUntil(
      async () => custom > 0 && (await db.query('SELECT 1 FROM jobs WHERE id = $1', [old.id])).rowCount === 0,
      { what: 'the custom task to run and the prune to remove the old job' },
    );
    await runner.stop();
    // Succeeded jobs go after a day, dead letters stay 30 days, live jobs stay.
    const left = await db.query<{ id: string }>('SELECT id FROM jobs WHERE id = ANY($1::text[])', [
      [old.id, dead.id, fresh.id],
    ]);
    expect(left.rows.map((r) => r.id).sort()).toEqual([dead.id, fresh.id].sort());
    const { rows } = await db.query<{ state: string }>(`SELECT state FROM jobs WHERE queue = $1`, [
      MAINTENANCE_QUEUE,
    ]);
    expect(rows.every((r) => r.state === 'succeeded' || r.state === 'queued')).toBe(true);
  });
});
