import type { ServerResponse } from 'node:http';
import type { TailRow } from '../ingest';
import { STREAM_LIMITS } from './stream-limits';

// One live stream's connection: what it is sent, in which shape, and how a slow reader is held
// (a queue bounded in bytes; past it the stream ends) and told what it missed.

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
  /** Messages waiting for the socket to drain, and their size in bytes. */
  queue: Message[];
  queuedBytes: number;
  blocked: boolean;
  /** Messages left out since the client was last told (`event: dropped`). */
  dropped: number;
  /** Set once the stream is ending: nothing more is written or queued. */
  ending: boolean;
  /** Ends the stream whose next message would take it past STREAM_LIMITS.bufferBytes (the hub's). */
  overflow: (s: Subscriber) => void;
  heartbeat: NodeJS.Timeout;
}

/** A message, with its size in bytes (counted once, however many streams it goes to). */
export interface Message {
  text: string;
  bytes: number;
}

export const message = (text: string): Message => ({ text, bytes: Buffer.byteLength(text) });

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

/** What the connection holds for its client: the queue, and what its socket has not sent yet. */
export const heldBytes = (s: Subscriber): number => (s.res.writableLength ?? 0) + s.queuedBytes;

export const write = (s: Subscriber, msg: Message) => {
  if (s.res.destroyed || s.ending) return;
  if (s.blocked) {
    if (heldBytes(s) + msg.bytes > STREAM_LIMITS.bufferBytes) {
      s.dropped++;
      s.overflow(s);
      return;
    }
    s.queue.push(msg);
    s.queuedBytes += msg.bytes;
    return;
  }
  if (!s.res.write(msg.text)) s.blocked = true;
};

export const flush = (s: Subscriber) => {
  if (s.res.destroyed || s.ending) return;
  s.blocked = false;
  while (s.queue.length > 0) {
    const msg = s.queue.shift()!;
    s.queuedBytes -= msg.bytes;
    if (!s.res.write(msg.text)) {
      s.blocked = true;
      return;
    }
  }
  s.queuedBytes = 0;
  if (s.dropped > 0) {
    const count = s.dropped;
    s.dropped = 0;
    if (!s.res.write(sse('dropped', { count }))) s.blocked = true;
  }
};

/**
 * Drops every message still waiting for the socket (an erasure: they may be the erased person's
 * events) and tells the client how many, as for any message left out: at once if the socket takes
 * it, else when it drains. Answers how many went. What the socket already accepted is no longer
 * the connection's to take back.
 */
export const dropQueued = (s: Subscriber): number => {
  const count = s.queue.length;
  if (count === 0) return 0;
  s.queue = [];
  s.queuedBytes = 0;
  s.dropped += count;
  return count;
};

export const passes = (f: StreamFilter, r: TailRow) =>
  (f.types.size === 0 || f.types.has(r.event_type!)) && (f.name === null || f.name === r.event_name);

/**
 * Several messages at once: handed to the socket in pieces of at most writeChunkBytes while it takes
 * them (one write per piece, not per message), the rest queued within the stream's byte bound.
 */
export const writeAll = (s: Subscriber, msgs: readonly Message[]) => {
  let i = 0;
  while (i < msgs.length && !s.blocked && !s.ending && !s.res.destroyed) {
    let bytes = 0;
    const piece: string[] = [];
    while (
      i < msgs.length &&
      (piece.length === 0 || bytes + msgs[i]!.bytes <= STREAM_LIMITS.writeChunkBytes)
    ) {
      bytes += msgs[i]!.bytes;
      piece.push(msgs[i++]!.text);
    }
    if (!s.res.write(piece.length === 1 ? piece[0]! : piece.join(''))) s.blocked = true;
  }
  for (; i < msgs.length && !s.ending; i++) write(s, msgs[i]!);
};
