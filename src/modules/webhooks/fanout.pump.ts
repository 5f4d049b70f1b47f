import type { Logger } from 'pino';
import type { Db } from '../../platform/db';
import { backoffMs } from '../../platform/jobs';
import { OUTBOX_CHANNEL } from '../outbox';
import { type FanOutOptions, fanOutWorkspace } from './fanout.job';
import { hasEnabledSubscription } from './webhooks.repo';

export interface FanOutPumpDeps extends FanOutOptions {
  db: Db;
  log: Logger;
  /** Called after deliveries were queued, so the job runner claims them now rather than at its next poll. */
  onDeliveries: () => void;
}

/**
 * Fans a workspace's outbox out as soon as a transaction that wrote facts to it commits (the
 * `cdp_outbox` notification), so a delivery's first attempt starts within milliseconds instead of
 * at the next scheduled fan-out. Per workspace one run at a time in this process; a notification
 * during a run makes it run once more. A notification comes after its transaction committed, so the
 * snapshot the run reads by sees that transaction's facts.
 *
 * Several processes may pump the same workspace: the cursor's row lock puts them one after the
 * other, and the second finds nothing left. If notifications stop (a lost LISTEN connection, an
 * outage), the scheduled fan-out (every `fanoutEvery`) still reads everything.
 */
export async function startFanOutPump(deps: FanOutPumpDeps): Promise<() => Promise<void>> {
  // The worker lane, as the job runner's own statements: on the foreground lane every commit that
  // wrote facts (nearly every batch the pipeline applies) counted as a request being served, and
  // PGlite's processing then cut its batches to ~15 ms (about 20 events instead of 250) while no
  // request was anywhere (docs/benchmarks.md, "Consent").
  const db = deps.db.lane('worker');
  const { log } = deps;
  const running = new Map<string, Promise<void>>();
  const again = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const later = (ws: string, ms: number) => {
    const t = setTimeout(() => {
      timers.delete(t);
      request(ws);
    }, ms);
    timers.add(t);
  };

  const request = (ws: string): void => {
    if (stopped) return;
    if (running.has(ws)) {
      again.add(ws);
      return;
    }
    const run = pump(ws).finally(() => running.delete(ws));
    running.set(ws, run);
  };

  async function pump(ws: string): Promise<void> {
    let failures = 0;
    do {
      again.delete(ws);
      try {
        // Most workspaces have no subscription: one indexed read, no cursor row, no lock.
        if (!(await hasEnabledSubscription(db, ws))) return;
        const deliveries = await fanOutWorkspace(db, ws, deps);
        failures = 0;
        if (deliveries > 0) deps.onDeliveries();
      } catch (err) {
        failures++;
        log.warn({ err, workspace_id: ws, failures }, 'webhooks: fan-out failed, retrying');
        later(ws, backoffMs(failures, { baseMs: 500, capMs: 30_000 }));
        return;
      }
    } while (again.has(ws) && !stopped);
  }

  const unlisten = await db.listen(OUTBOX_CHANNEL, (ws) => request(ws));
  return async () => {
    stopped = true;
    for (const t of timers) clearTimeout(t);
    await unlisten();
    await Promise.allSettled([...running.values()]);
  };
}
