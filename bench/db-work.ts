/**
 * Two figures of the database's share of a workload that the machine's other load barely moves:
 *
 * - rows written per event, per table (pg_stat_user_tables: inserted, updated, deleted rows of
 *   the service's schema) and the index entries they cost (an insert or a non-HOT update writes one
 *   entry in each index of its table): the issue's measure of what processing writes;
 * - on PostgreSQL, the CPU the service's own backends spent (found in pg_stat_activity by the
 *   `cdp:<pid>` application name every service connection carries, read from /proc), where the
 *   machine-wide figure also counts whatever else the machine does.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Db } from '../src/platform/db';
import { cpuSecondsOf } from './lib';

export interface TableWrites {
  table: string;
  ins: number;
  upd: number;
  hot: number;
  del: number;
  indexes: number;
}

/** The cumulative write counters of every table of the schema. */
export async function readTableWrites(db: Db): Promise<Map<string, TableWrites>> {
  const { rows } = await db.query<{
    table: string;
    ins: string;
    upd: string;
    hot: string;
    del: string;
    indexes: string;
  }>(
    `SELECT s.relname AS table, s.n_tup_ins AS ins, s.n_tup_upd AS upd, s.n_tup_hot_upd AS hot,
            s.n_tup_del AS del, (SELECT count(*) FROM pg_index i WHERE i.indrelid = s.relid) AS indexes
       FROM pg_stat_user_tables s WHERE s.schemaname = current_schema()`,
  );
  return new Map(
    rows.map((r) => [
      r.table,
      { table: r.table, ins: +r.ins, upd: +r.upd, hot: +r.hot, del: +r.del, indexes: +r.indexes },
    ]),
  );
}

/**
 * Reads the counters until two readings a second apart agree (a backend reports its counts when
 * it goes idle, at most once a second, or after ten seconds of waiting): the workload's last
 * writes are in. At most 20 s.
 */
export async function settledTableWrites(db: Db): Promise<Map<string, TableWrites>> {
  let last = await readTableWrites(db);
  const sum = (m: Map<string, TableWrites>) => [...m.values()].reduce((a, t) => a + t.ins + t.upd + t.del, 0);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await readTableWrites(db);
    if (sum(now) === sum(last)) return now;
    last = now;
  }
  return last;
}

/** Rows and index entries written per event between two readings, with the tables that wrote most. */
export function writesPerEvent(
  before: Map<string, TableWrites>,
  after: Map<string, TableWrites>,
  events: number,
): { rows: number; entries: number; byTable: string } {
  const tables = [...after.values()].map((a) => {
    const b = before.get(a.table) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const ins = a.ins - b.ins;
    const upd = a.upd - b.upd;
    const hot = a.hot - b.hot;
    const del = a.del - b.del;
    return { table: a.table, rows: ins + upd + del, entries: (ins + upd - hot) * a.indexes, ins, upd, del };
  });
  const per = (n: number) => n / events;
  const busy = tables.filter((t) => t.rows > 0).sort((x, y) => y.rows - x.rows);
  return {
    rows: per(busy.reduce((a, t) => a + t.rows, 0)),
    entries: per(busy.reduce((a, t) => a + t.entries, 0)),
    byTable: busy
      .map(
        (t) =>
          `${t.table} ${per(t.rows).toFixed(2)}` +
          ` (+${per(t.ins).toFixed(2)} ~${per(t.upd).toFixed(2)} -${per(t.del).toFixed(2)}; ${per(t.entries).toFixed(2)} idx)`,
      )
      .join(', '),
  };
}

/**
 * The CPU seconds of the PostgreSQL backends serving these service processes, sampled: a backend
 * first seen after the start counts from zero (it connected during the window), one that exits
 * keeps its last reading.
 */
export function backendCpuSampler(url: string, pids: readonly number[]) {
  const client = new pg.Client({ connectionString: url });
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let started = false;
  /** Samples of backends running a statement, and of those waiting on a lock, by the lock's kind. */
  const waits = { active: 0, lock: 0, byKind: new Map<string, number>() };
  const sample = async () => {
    const { rows } = await client.query<{
      pid: number;
      state: string | null;
      wtype: string | null;
      wevent: string | null;
    }>(
      `SELECT pid, state, wait_event_type AS wtype, wait_event AS wevent FROM pg_stat_activity
        WHERE application_name = ANY($1::text[])`,
      [pids.map((p) => `cdp:${p}`)],
    );
    for (const { pid, state, wtype, wevent } of rows) {
      if (started && state === 'active') {
        waits.active++;
        if (wtype === 'Lock') {
          waits.lock++;
          waits.byKind.set(wevent ?? '?', (waits.byKind.get(wevent ?? '?') ?? 0) + 1);
        }
      }
      let cpu: number;
      try {
        readFileSync(`/proc/${pid}/stat`);
        cpu = cpuSecondsOf(pid);
      } catch {
        continue; // another machine's server, or gone meanwhile
      }
      if (!first.has(pid)) first.set(pid, started ? 0 : cpu);
      last.set(pid, cpu);
    }
  };
  return {
    async start() {
      await client.connect();
      await sample();
      started = true;
    },
    sample,
    /** Of the samples of a backend running a statement, the share waiting on a lock, by kind. */
    lockWaits(): string {
      if (waits.active === 0) return 'no active backend sampled';
      const pct = (n: number) => `${((100 * n) / waits.active).toFixed(1)}%`;
      const kinds = [...waits.byKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${pct(n)}`);
      return `${pct(waits.lock)} of ${waits.active} samples of an active backend waited on a lock${kinds.length ? ` (${kinds.join(', ')})` : ''}`;
    },
    /** Seconds spent since start(); null when no backend could be read (a server elsewhere). */
    async stop(): Promise<number | null> {
      await sample().catch(() => {});
      await client.end().catch(() => {});
      if (last.size === 0) return null;
      let s = 0;
      for (const [pid, cpu] of last) s += cpu - (first.get(pid) ?? 0);
      return s;
    },
  };
}
