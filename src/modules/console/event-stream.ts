import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { BACKGROUND_SLICE_MS, createYielder } from '../../platform/cooperate';
import type { Db } from '../../platform/db';
import { AppError } from '../../platform/errors';
import { lastLogSeq, readLogTail, type TailRow } from '../ingest';
import {
  flush,
  passes,
  present,
  type StreamFilter,
  type Subscriber,
  sse,
  write,
  writeAll,
} from './stream-connection';
import { STREAM_LIMITS } from './stream-limits';

export interface EventStreamHub {
  /**
   * Takes over the response (already hijacked from Fastify) as a stream of this workspace's events;
   * throws 429/503 when a limit is reached (before anything is written). `stillValid` is asked at
   * every heartbeat: a signed-out session or a revoked key ends the stream.
   */
  open(
    workspaceId: string,
    filter: StreamFilter,
    res: ServerResponse,
    stillValid: () => Promise<boolean>,
  ): void;
  /** Refuses with 429/503 if a stream could not be opened now (checked before the response is taken). */
  admit(workspaceId: string): void;
  /** Open streams, their workspaces, and the last seq of the log read (null before the first read). */
  stats(): { streams: number; workspaces: number; cursor: string | null };
  /** Ends every stream (shutdown). */
  close(): void;
}

/** Seqs looked for again at once, at most (each poll sends them as one array parameter). */
const MAX_MISSING = 1_000;

/**
 * The live event stream's fan-out, one per process. While any stream is open, one poller reads the
 * log's tail by seq (a primary-key range, whatever the number of streams and workspaces) and hands
 * each event to the streams of its workspace whose filter it passes. Reading the log, rather than
 * hooking the ingest path, costs ingestion nothing, shows events however they were appended (API,
 * batch, demo, another instance on PostgreSQL) and needs no cross-instance channel. A seq missing
 * from a read (an append on another connection still committing) is looked for again for
 * `recheckMs`, so concurrent commits do not lose events.
 */
export function createEventStreamHub(
  db: Db,
  log: Pick<Logger, 'warn' | 'debug'>,
  opts: { heartbeatMs?: number } = {},
): EventStreamHub {
  const heartbeatMs = opts.heartbeatMs ?? STREAM_LIMITS.heartbeatMs;
  const byWorkspace = new Map<string, Set<Subscriber>>();
  let total = 0;
  /** Last seq read; null until the first poll places it at the end of the log. */
  let cursor: string | null = null;
  /** Seqs below the cursor not seen yet, with when they were first missed. */
  const missing = new Map<string, number>();
  let timer: NodeJS.Timeout | null = null;
  let polling = false;
  let closed = false;

  /**
   * A poll's events to every stream, giving the event loop a turn every 2 ms: at 2,000 events/s
   * to 50 streams one poll's delivery in a single turn added 3–6 ms to ingest's p99 on PostgreSQL
   * (bench/console.bench.ts).
   */
  const deliver = async (rows: TailRow[]) => {
    const yieldNow = createYielder(BACKGROUND_SLICE_MS);
    const batches = new Map<Subscriber, string[]>();
    for (const r of rows) {
      if (yieldNow.due()) await yieldNow();
      if (r.workspace_id === null) continue;
      const subs = byWorkspace.get(r.workspace_id);
      if (!subs) continue;
      let msg: string | null = null;
      for (const s of subs) {
        if (!passes(s.filter, r)) continue;
        msg ??= sse('event', present(r));
        let batch = batches.get(s);
        if (!batch) {
          batch = [];
          batches.set(s, batch);
        }
        batch.push(msg);
      }
    }
    for (const [s, msgs] of batches) {
      if (yieldNow.due()) await yieldNow();
      writeAll(s, msgs);
    }
  };

  /** Every stream missed events (the log grew faster than a poll reads): say how many. */
  const dropEverywhere = (count: number) => {
    for (const subs of byWorkspace.values()) {
      for (const s of subs) {
        s.dropped += count;
        if (!s.blocked) flush(s);
      }
    }
  };

  async function poll() {
    if (polling || closed) return;
    polling = true;
    try {
      if (cursor === null) {
        cursor = await lastLogSeq(db);
        return;
      }
      const now = Date.now();
      for (const [seq, at] of missing) if (now - at > STREAM_LIMITS.recheckMs) missing.delete(seq);
      const rows = await readLogTail(
        db,
        cursor,
        [...missing.keys()],
        [...byWorkspace.keys()],
        STREAM_LIMITS.rowsPerPoll,
      );
      let last = BigInt(cursor);
      const fresh: TailRow[] = [];
      for (const r of rows) {
        const seq = BigInt(r.seq);
        if (missing.delete(r.seq) || seq > last) fresh.push(r);
        if (seq > last) {
          // The seqs skipped on the way are appends not committed yet (or rolled back).
          for (let s = last + 1n; s < seq && missing.size < MAX_MISSING; s++) missing.set(String(s), now);
          last = seq;
        }
      }
      // The cursor moves once the rows are delivered (delivery takes turns of the event loop), so
      // it says what every stream has been given, not only what was read.
      await deliver(fresh);
      // Unless the last stream closed meanwhile: the next first stream starts at the end again.
      if (timer !== null) cursor = String(last);
      if (rows.length === STREAM_LIMITS.rowsPerPoll) {
        // Far behind: jump to the end rather than replay a backlog nobody is watching live.
        const end = await lastLogSeq(db);
        const behind = Number(BigInt(end) - last);
        if (behind > STREAM_LIMITS.rowsPerPoll * 4) {
          cursor = end;
          missing.clear();
          dropEverywhere(behind);
        }
      }
    } catch (err) {
      // Storage trouble: the streams stay open and the next poll tries again. Never the rows.
      log.warn({ err: (err as Error).message }, 'console: reading the event log for live streams failed');
    } finally {
      polling = false;
    }
  }

  const start = () => {
    if (timer || closed) return;
    timer = setInterval(() => void poll(), STREAM_LIMITS.pollMs);
    timer.unref();
    void poll();
  };

  const stopIfIdle = () => {
    if (total > 0 || !timer) return;
    clearInterval(timer);
    timer = null;
    // The next first stream starts at the end of the log again.
    cursor = null;
    missing.clear();
  };

  const remove = (s: Subscriber) => {
    const subs = byWorkspace.get(s.workspaceId);
    if (!subs?.delete(s)) return;
    clearInterval(s.heartbeat);
    total--;
    if (subs.size === 0) byWorkspace.delete(s.workspaceId);
    stopIfIdle();
  };

  const admit = (workspaceId: string) => {
    if ((byWorkspace.get(workspaceId)?.size ?? 0) >= STREAM_LIMITS.perWorkspace) {
      throw new AppError(
        'RATE_LIMITED',
        `a workspace has at most ${STREAM_LIMITS.perWorkspace} live event streams open at once; close one (another tab of the console) and retry`,
        { headers: { 'retry-after': '5' } },
      );
    }
    if (total >= STREAM_LIMITS.perProcess || closed) {
      throw new AppError(
        'UNAVAILABLE',
        'this instance holds as many live event streams as it serves; retry',
        {
          headers: { 'retry-after': '5' },
        },
      );
    }
  };

  return {
    admit,
    open(workspaceId, filter, res, stillValid) {
      admit(workspaceId);
      const s: Subscriber = {
        workspaceId,
        filter,
        res,
        queue: [],
        blocked: false,
        dropped: 0,
        heartbeat: setInterval(() => {
          write(s, ': heartbeat\n\n');
          stillValid().then(
            (valid) => {
              if (!valid) {
                write(s, sse('end', { reason: 'the session or key is no longer valid' }));
                res.end();
              }
            },
            () => {},
          );
        }, heartbeatMs),
      };
      s.heartbeat.unref();
      let subs = byWorkspace.get(workspaceId);
      if (!subs) {
        subs = new Set();
        byWorkspace.set(workspaceId, subs);
      }
      subs.add(s);
      total++;
      res.on('drain', () => flush(s));
      res.on('close', () => remove(s));
      // Reconnect after 3 s if the connection drops; a first comment so the client sees it open.
      res.write('retry: 3000\n: connected\n\n');
      start();
    },
    stats: () => ({ streams: total, workspaces: byWorkspace.size, cursor }),
    close() {
      closed = true;
      if (timer) clearInterval(timer);
      timer = null;
      for (const subs of [...byWorkspace.values()]) for (const s of [...subs]) s.res.end();
    },
  };
}
