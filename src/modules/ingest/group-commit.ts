/**
 * Adaptive group commit: many concurrent callers, few commits.
 *
 * Every durable write costs a commit (a WAL flush on PostgreSQL), and a commit costs about the same
 * for one row as for a thousand. So callers submit items here and share flushes, under one rule:
 * a flush starts at once while fewer than `maxInFlight` (2) flushes are running; otherwise the item
 * waits and joins the next flush, which starts the moment a running one ends and takes everything
 * that queued meanwhile. Under light load every item is flushed alone, with no added delay; under
 * heavy load batches grow by themselves to match the commit latency. A fixed collection window (wait
 * N ms, then flush) measured worse on both counts: it adds its window to every request and still
 * caps throughput when the window is too short for the load.
 *
 * The core knows nothing of SQL: `flush` receives a batch of items and answers one result per item
 * (or an Error for an item that alone failed); a thrown error fails every item of that flush.
 * A caller's promise settles only when its flush has settled, so an acknowledgement built on it
 * never runs ahead of the commit.
 */
export interface GroupCommitOptions<I, O> {
  /** Writes a batch; returns one result (or Error) per item, in order. Throwing fails them all. */
  flush(items: I[]): Promise<Array<O | Error>>;
  /** Flushes allowed to run at once (2: one committing while the next is being sent). */
  maxInFlight?: number;
  /** Upper bound on the summed weight of one flush (e.g. rows per INSERT). */
  maxBatchWeight?: number;
  /** Upper bound on the summed weight waiting; beyond it submit() refuses at once (overload). */
  maxQueuedWeight?: number;
  /** Weight of an item (e.g. its number of rows); 1 by default. */
  weight?(item: I): number;
  /**
   * Longest an item may wait in the queue before a flush takes it; then it is refused (nothing was
   * written). Flushes that hang (a database outage) would otherwise hold every queued caller too.
   * No bound by default.
   */
  maxWaitMs?: number;
}

export interface GroupCommitStats {
  flushes: number;
  items: number;
  failedFlushes: number;
  /** Items refused because they waited longer than maxWaitMs. */
  expired: number;
  inFlight: number;
  queuedWeight: number;
  largestFlush: number;
}

export interface GroupCommit<I, O> {
  /** Resolves once the item's flush has committed; rejects if it failed or the writer is overloaded. */
  submit(item: I): Promise<O>;
  /** Refuses new items, then waits until every queued and running flush has settled. */
  close(): Promise<void>;
  stats(): GroupCommitStats;
}

/** Thrown by submit() when the queue is full, waited too long or the writer is closed; nothing was written. */
export class GroupCommitRefused extends Error {
  constructor(readonly reason: 'overloaded' | 'closed' | 'timeout') {
    super(
      reason === 'closed'
        ? 'writer is closed'
        : reason === 'timeout'
          ? 'writer did not get to the item in time'
          : 'writer is overloaded',
    );
    this.name = 'GroupCommitRefused';
  }
}

interface Pending<I, O> {
  item: I;
  weight: number;
  /** performance.now() at submit. */
  at: number;
  resolve(v: O): void;
  reject(e: unknown): void;
}

export function createGroupCommit<I, O>(opts: GroupCommitOptions<I, O>): GroupCommit<I, O> {
  const maxInFlight = opts.maxInFlight ?? 2;
  const maxBatchWeight = opts.maxBatchWeight ?? 5000;
  const maxQueuedWeight = opts.maxQueuedWeight ?? 100_000;
  const weightOf = opts.weight ?? (() => 1);
  const maxWaitMs = opts.maxWaitMs ?? null;

  let queue: Array<Pending<I, O>> = [];
  let queuedWeight = 0;
  let inFlight = 0;
  let closed = false;
  const idleWaiters: Array<() => void> = [];
  const stats = { flushes: 0, items: 0, failedFlushes: 0, expired: 0, largestFlush: 0 };
  /** One timer for the oldest queued item's deadline (the queue is in arrival order). */
  let waitTimer: NodeJS.Timeout | null = null;

  const settleIdle = () => {
    if (inFlight === 0 && queue.length === 0) for (const w of idleWaiters.splice(0)) w();
  };

  /** Takes the longest prefix of the queue that fits one flush (always at least one item). */
  function takeBatch(): Array<Pending<I, O>> {
    let w = 0;
    let n = 0;
    while (n < queue.length && (n === 0 || w + queue[n]!.weight <= maxBatchWeight)) {
      w += queue[n]!.weight;
      n++;
    }
    const batch = queue.slice(0, n);
    queue = n === queue.length ? [] : queue.slice(n);
    queuedWeight -= w;
    return batch;
  }

  function armWaitTimer(): void {
    if (maxWaitMs === null || waitTimer || queue.length === 0) return;
    const due = Math.max(0, queue[0]!.at + maxWaitMs - performance.now());
    waitTimer = setTimeout(expireWaiting, due);
    waitTimer.unref();
  }

  function expireWaiting(): void {
    waitTimer = null;
    const now = performance.now();
    let n = 0;
    while (n < queue.length && now - queue[n]!.at >= maxWaitMs!) n++;
    if (n > 0) {
      const expired = queue.slice(0, n);
      queue = queue.slice(n);
      for (const p of expired) {
        queuedWeight -= p.weight;
        p.reject(new GroupCommitRefused('timeout'));
      }
      stats.expired += n;
    }
    armWaitTimer();
    settleIdle();
  }

  function pump(): void {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = takeBatch();
      inFlight++;
      stats.flushes++;
      stats.items += batch.length;
      if (batch.length > stats.largestFlush) stats.largestFlush = batch.length;
      void run(batch);
    }
  }

  async function run(batch: Array<Pending<I, O>>): Promise<void> {
    try {
      const results = await opts.flush(batch.map((p) => p.item));
      if (results.length !== batch.length) throw new Error('flush returned a wrong number of results');
      batch.forEach((p, i) => {
        const r = results[i] as O | Error;
        if (r instanceof Error) p.reject(r);
        else p.resolve(r);
      });
    } catch (err) {
      stats.failedFlushes++;
      for (const p of batch) p.reject(err);
    } finally {
      inFlight--;
      pump();
      settleIdle();
    }
  }

  return {
    submit(item) {
      if (closed) return Promise.reject(new GroupCommitRefused('closed'));
      const weight = Math.max(1, weightOf(item));
      // A lone item larger than the whole queue budget is still taken when nothing waits.
      if (queue.length > 0 && queuedWeight + weight > maxQueuedWeight) {
        return Promise.reject(new GroupCommitRefused('overloaded'));
      }
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, weight, at: performance.now(), resolve, reject });
        queuedWeight += weight;
        pump();
        armWaitTimer();
      });
    },
    close() {
      closed = true;
      if (inFlight === 0 && queue.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    stats: () => ({ ...stats, inFlight, queuedWeight }),
  };
}
