import { setTimeout as delay } from 'node:timers/promises';

/**
 * How tests wait (docs/testing.md). A test never sleeps to let something happen: it waits for the
 * state it needs (`waitUntil`), or, where time itself is what is under test (a timeout, a lease, a
 * grace period, a slow client, a paced workload), it says so (`letTimePass`). No vitest import:
 * child-process helpers (test/*.ts run with tsx) and benches use these too.
 */

/** The real clock, taken before any test fakes `performance` (a wait must end even then). */
const now = performance.now.bind(performance);

export interface WaitOptions {
  /** What is awaited, as the failure names it: "the worker to start", "3 deliveries to /a". */
  what: string;
  /** Deadline (default 10 s). */
  timeoutMs?: number;
  /** Pause between two checks (default 20 ms). */
  intervalMs?: number;
  /** More for the failure message (output so far, the last value read), called only on failure. */
  detail?: () => unknown;
}

/**
 * Checks `check` until it answers something truthy and returns that answer; fails after `timeoutMs`
 * with "timed out after N ms waiting for <what>". A check that throws fails the wait at once.
 */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  opts: WaitOptions,
): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
    if (now() > deadline) {
      const detail = opts.detail ? opts.detail() : undefined;
      const more =
        detail === undefined ? '' : `\n${typeof detail === 'string' ? detail : JSON.stringify(detail)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what}${more}`);
    }
    await delay(opts.intervalMs ?? 20);
  }
}

/**
 * Lets `ms` of real time pass, on purpose: the time is what the test is about (a lease or a grace
 * period running out, a client that is slow, a workload spread over time), never a guess at how
 * long something else takes. `why` says which, for the reader.
 */
export async function letTimePass(ms: number, why: string): Promise<void> {
  if (!why) throw new Error('letTimePass: say why the time must pass');
  await delay(ms);
}
