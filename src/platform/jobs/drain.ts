import type { Queryable } from '../db/port';
import type { Job } from './jobs.repo';
import { enqueue } from './jobs.repo';

/**
 * A queue that drains per-workspace work lists (segment refreshes, rescoring): whoever adds work
 * queues `{workspace_id}` under the workspace's key, so a burst of writers makes one job. A running
 * job holds that key, so work added after the job's last look is queued onto the running job and
 * would wait for the next sweep. Each such job therefore ends by queuing a follow-up under a second
 * key, which looks once more `followUpMs` later and hands on to an ordinary job if it found work.
 */
export interface WorkspaceDrain {
  readonly queue: string;
  /** Queues a drain of the workspace (nothing new if one is queued), in the caller's transaction. */
  enqueue(q: Queryable, workspaceId: string, delayMs?: number): Promise<void>;
  /**
   * Call at the end of a drain job of `workspaceId`: `done` = the list was empty at the end (the job
   * did not stop on its budget), `worked` = it found something to do.
   */
  settle(
    q: Queryable,
    job: Pick<Job, 'key'>,
    workspaceId: string,
    r: { done: boolean; worked: boolean },
  ): Promise<void>;
}

export function workspaceDrain(queue: string, opts: { followUpMs?: number } = {}): WorkspaceDrain {
  const followUpMs = opts.followUpMs ?? 250;
  const mainKey = (ws: string) => `ws:${ws}`;
  const nextKey = (ws: string) => `ws:${ws}:next`;
  const put = (q: Queryable, ws: string, key: string, delayMs: number) =>
    enqueue(q, { queue, key, workspaceId: ws, delayMs, payload: { workspace_id: ws } }).then(() => {});
  return {
    queue,
    enqueue: (q, ws, delayMs = 0) => put(q, ws, mainKey(ws), delayMs),
    async settle(q, job, ws, r) {
      if (job.key === nextKey(ws)) {
        // A follow-up that found work (or ran out of time) hands on to an ordinary job.
        if (!r.done || r.worked) await put(q, ws, mainKey(ws), 0);
      } else {
        await put(q, ws, nextKey(ws), r.done ? followUpMs : 0);
      }
    },
  };
}
