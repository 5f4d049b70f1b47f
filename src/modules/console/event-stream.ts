import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { BACKGROUND_SLICE_MS, createYielder } from '../../platform/cooperate';
import type { Db } from '../../platform/db';
import { AppError } from '../../platform/errors';
import { ERASURE_CHANNEL } from '../../platform/personal-data';
import { lastLogSeq, readLogTail, type TailRow } from '../ingest';
import {
  dropQueued,
  flush,
  heldBytes,
  type Message,
  message,
  passes,
  present,
  type StreamFilter,
  type Subscriber,
  sse,
  write,
  writeAll,
} from './stream-connection';
import { STREAM_LIMITS } from './stream-limits';

/** What the hub has done since it was created, for tests and the operator's questions. */
export interface EventStreamStats {
  streams: number;
  workspaces: number;
  /** Last seq of the log read (null before the first read). */
  cursor: string | null;
  /** Streams ended because their client held more than STREAM_LIMITS.bufferBytes unread. */
  endedSlow: number;
  /** Messages dropped from streams' buffers because an erasure committed in their workspace. */
  droppedOnErasure: number;
}

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
  /** Open streams, their workspaces, the last seq of the log read, and what was ended or dropped. */
  stats(): EventStreamStats;
  /** Ends every stream (shutdown). */
  close(): void;
}

/** Seqs looked for again at once, at most (each poll sends them as one array parameter). */
const MAX_MISSING = 1_000;

const HEARTBEAT = message(': heartbeat\n\n');

/**
 * The live event stream's fan-out, one per process. While any stream is open, one poller reads the
 * log's tail by seq (a primary-key range, whatever the number of streams and workspaces) and hands
 * each event to the streams of its workspace whose filter it passes. Reading the log, rather than
 * hooking the ingest path, costs ingestion nothing, shows events however they were appended (API,
 * batch, demo, another instance on PostgreSQL) and needs no cross-instance channel. A seq missing
 * from a read (an append on another connection still committing) is looked for again for
 * `recheckMs`, so concurrent commits do not lose events.
 *
 * Memory is bounded per stream in bytes (STREAM_LIMITS.bufferBytes): a client that stops reading
 * is ended rather than buffered for. And while streams are open the hub listens for erasures
 * (ERASURE_CHANNEL, the workspace id as payload): every message still waiting in that workspace's
 * streams is dropped, and so is what the poll in flight read before the erasure committed.
 */
export function createEventStreamHub(
  db: Db,
  log: Pick<Logger, 'warn' | 'info' | 'debug'>,
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
  let endedSlow = 0;
  let droppedOnErasure = 0;
  /** Rows the next poll reads: sized by what the last polls handed out (see poll). */
  let rowLimit: number = STREAM_LIMITS.rowsPerPoll;
  /**
   * Workspaces an erasure committed in since the poll in flight began reading: its rows of them
   * may be the erased person's, read before the commit, and are dropped rather than delivered.
   */
  let erasedDuringPoll = new Set<string>();
  /** Stops listening for erasures (set while streams are open). */
  let unlisten: (() => Promise<void>) | null = null;

  /**
   * A poll's events to every stream, giving the event loop a turn every 2 ms: at 2,000 events/s
   * to 50 streams one poll's delivery in a single turn added 3–6 ms to ingest's p99 on PostgreSQL
   * (bench/console.bench.ts).
   */
  const deliver = async (
    rows: ReadonlyArray<{ row: TailRow; msg: Message }>,
    erased: ReadonlySet<string>,
  ) => {
    const yieldNow = createYielder(BACKGROUND_SLICE_MS);
    const batches = new Map<Subscriber, Message[]>();
    for (const { row: r, msg } of rows) {
      if (yieldNow.due()) await yieldNow();
      for (const s of byWorkspace.get(r.workspace_id!) ?? []) {
        if (!passes(s.filter, r)) continue;
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
      // Read before an erasure of its workspace committed: possibly the erased person's.
      if (erased.has(s.workspaceId)) {
        s.dropped += msgs.length;
        droppedOnErasure += msgs.length;
        if (!s.blocked) flush(s);
        continue;
      }
      writeAll(s, msgs);
    }
  };

  /** The message of a row some open stream of its workspace shows (null: none does). */
  const messageOf = (r: TailRow): Message | null => {
    if (r.workspace_id === null) return null;
    for (const s of byWorkspace.get(r.workspace_id) ?? []) {
      if (passes(s.filter, r)) return message(sse('event', present(r)));
    }
    return null;
  };

  /** An erasure committed in this workspace: nothing buffered for its streams may be sent any more. */
  const onErasure = (workspaceId: string) => {
    erasedDuringPoll.add(workspaceId);
    const subs = byWorkspace.get(workspaceId);
    if (!subs) return;
    let count = 0;
    for (const s of subs) {
      const n = dropQueued(s);
      count += n;
      if (n > 0 && !s.blocked) flush(s);
    }
    droppedOnErasure += count;
    if (count > 0)
      log.info(
        { workspace_id: workspaceId, dropped: count },
        'console: an erasure dropped buffered live events',
      );
  };

  /** Notifications may have been missed (the listening connection dropped): drop every buffer. */
  const onListenLost = () => {
    for (const ws of [...byWorkspace.keys()]) onErasure(ws);
  };

  /**
   * The stream's client holds more than its share unread: the stream ends, its buffer is freed and
   * its place given back at once. Its last words (how many messages it missed, and why it ends) go
   * to the socket for a client that reads again; one that does not is cut after endGraceMs.
   */
  const overflow = (s: Subscriber) => {
    const held = heldBytes(s);
    const count = s.dropped + s.queue.length;
    s.ending = true;
    s.queue = [];
    s.queuedBytes = 0;
    s.dropped = 0;
    endedSlow++;
    log.info(
      { workspace_id: s.workspaceId, held_bytes: held, dropped: count, ended_slow: endedSlow },
      'console: ended a live event stream whose client read too slowly',
    );
    if (!s.res.destroyed) {
      s.res.write(
        sse('dropped', { count }) +
          sse('end', {
            reason: `the client read too slowly: more than ${STREAM_LIMITS.bufferBytes} bytes waited for it`,
          }),
      );
      const socket = s.res.socket;
      s.res.end();
      // The connection goes with the stream once its last words are out (not kept alive for another
      // request); a client that does not take them within the grace is cut, and its buffer freed.
      s.res.once('finish', () => socket?.end());
      const cut = setTimeout(() => {
        s.res.destroy();
        socket?.destroy();
      }, STREAM_LIMITS.endGraceMs);
      cut.unref();
      (socket ?? s.res).once('close', () => clearTimeout(cut));
    }
    remove(s);
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
      // From here on, an erasure that commits may have committed after this read: its rows are dropped.
      const erased = new Set<string>();
      erasedDuringPoll = erased;
      const rows = await readLogTail(db, cursor, [...missing.keys()], [...byWorkspace.keys()], rowLimit);
      let last = BigInt(cursor);
      const fresh: Array<{ row: TailRow; msg: Message }> = [];
      // A poll hands out at most pollBytes of messages (the first always goes): a stream whose client
      // keeps reading then never holds more than that from one poll, and neither does the poller.
      let bytes = 0;
      let consumed = 0;
      let cut = false;
      for (const r of rows) {
        const seq = BigInt(r.seq);
        if (missing.has(r.seq) || seq > last) {
          const msg = messageOf(r);
          if (msg) {
            if (bytes > 0 && bytes + msg.bytes > STREAM_LIMITS.pollBytes) {
              cut = true;
              break;
            }
            bytes += msg.bytes;
            fresh.push({ row: r, msg });
          }
        }
        consumed++;
        missing.delete(r.seq);
        if (seq > last) {
          // The seqs skipped on the way are appends not committed yet (or rolled back).
          for (let s = last + 1n; s < seq && missing.size < MAX_MISSING; s++) missing.set(String(s), now);
          last = seq;
        }
      }
      // Rows per read follow what a poll hands out: large events, few rows; small ones, up to the cap.
      rowLimit = cut
        ? Math.max(1, consumed)
        : rows.length === rowLimit
          ? Math.min(STREAM_LIMITS.rowsPerPoll, rowLimit * 2)
          : rowLimit;
      // The cursor moves once the rows are delivered (delivery takes turns of the event loop), so
      // it says what every stream has been given, not only what was read.
      await deliver(fresh, erased);
      // Unless the last stream closed meanwhile: the next first stream starts at the end again.
      if (timer !== null) cursor = String(last);
      if (cut || rows.length === STREAM_LIMITS.rowsPerPoll) {
        // Far behind (more than four polls' worth): jump to the end rather than replay a backlog
        // nobody is watching live.
        const end = await lastLogSeq(db);
        const behind = Number(BigInt(end) - last);
        if (behind > Math.max(consumed, 1) * 4 && behind > 0) {
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
    // Listening is set up before the first event can be delivered: the first poll only places the
    // cursor, and the next comes pollMs later.
    db.listen(ERASURE_CHANNEL, onErasure, onListenLost).then(
      (stop) => {
        if (timer === null || unlisten) void stop();
        else unlisten = stop;
      },
      (err: unknown) => {
        // Without the notifications no buffer can be trusted to forget an erased person: end them.
        log.warn({ err: (err as Error).message }, 'console: cannot listen for erasures; live streams end');
        for (const subs of [...byWorkspace.values()]) for (const x of [...subs]) x.res.end();
      },
    );
    void poll();
  };

  const stopIfIdle = () => {
    if (total > 0 || !timer) return;
    clearInterval(timer);
    timer = null;
    // The next first stream starts at the end of the log again.
    cursor = null;
    missing.clear();
    const stop = unlisten;
    unlisten = null;
    if (stop) void stop();
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
        queuedBytes: 0,
        blocked: false,
        dropped: 0,
        ending: false,
        overflow,
        heartbeat: setInterval(() => {
          write(s, HEARTBEAT);
          stillValid().then(
            (valid) => {
              if (!valid && !s.ending) {
                write(s, message(sse('end', { reason: 'the session or key is no longer valid' })));
                s.ending = true;
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
    stats: () => ({ streams: total, workspaces: byWorkspace.size, cursor, endedSlow, droppedOnErasure }),
    close() {
      closed = true;
      if (timer) clearInterval(timer);
      timer = null;
      const stop = unlisten;
      unlisten = null;
      if (stop) void stop();
      for (const subs of [...byWorkspace.values()]) for (const s of [...subs]) s.res.end();
    },
  };
}
