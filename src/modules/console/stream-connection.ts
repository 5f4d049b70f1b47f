import type { ServerResponse } from 'node:http';
import type { TailRow } from '../ingest';
import { STREAM_LIMITS } from './stream-limits';

// One live stream's connection: what it is sent, in which shape, and how a slow reader is held
// (a bounded queue, then a count of what was dropped).

export interface StreamFilter {
  /** Event types to show; empty: all. */
  types: ReadonlySet<string>;
  /** Exact event name; null: all. */
  name: string | null;
}

export interface StreamedEvent {
  id: string;
  type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  occurred_at: string;
  received_at: string;
  payload: Record<string, unknown>;
}

export interface Subscriber {
  workspaceId: string;
  filter: StreamFilter;
  res: ServerResponse;
  /** Messages waiting for the socket to drain. */
  queue: string[];
  blocked: boolean;
  dropped: number;
  heartbeat: NodeJS.Timeout;
}

export const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const iso = (d: Date | string | null) => (d === null ? '' : new Date(d).toISOString());

export function present(r: TailRow): StreamedEvent {
  return {
    id: r.id!,
    type: r.event_type!,
    event_name: r.event_name!,
    anonymous_id: r.anonymous_id,
    identity: r.identity,
    occurred_at: iso(r.occurred_at),
    received_at: iso(r.received_at),
    payload: r.payload ?? {},
  };
}

export const write = (s: Subscriber, msg: string) => {
  if (s.res.destroyed) return;
  if (s.blocked) {
    if (s.queue.length >= STREAM_LIMITS.buffer) s.dropped++;
    else s.queue.push(msg);
    return;
  }
  if (!s.res.write(msg)) s.blocked = true;
};

export const flush = (s: Subscriber) => {
  s.blocked = false;
  while (s.queue.length > 0) {
    if (!s.res.write(s.queue.shift()!)) {
      s.blocked = true;
      return;
    }
  }
  if (s.dropped > 0) {
    const count = s.dropped;
    s.dropped = 0;
    if (!s.res.write(sse('dropped', { count }))) s.blocked = true;
  }
};

export const passes = (f: StreamFilter, r: TailRow) =>
  (f.types.size === 0 || f.types.has(r.event_type!)) && (f.name === null || f.name === r.event_name);

/** Several messages at once: one socket write per stream and poll, however many events it had. */
export const writeAll = (s: Subscriber, msgs: string[]) => {
  if (s.res.destroyed || msgs.length === 0) return;
  if (s.blocked) {
    for (const m of msgs) write(s, m);
    return;
  }
  if (!s.res.write(msgs.length === 1 ? msgs[0]! : msgs.join(''))) s.blocked = true;
};
