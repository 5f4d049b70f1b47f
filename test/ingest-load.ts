import { randomUUID } from 'node:crypto';
import type { Db } from '../src/platform/db';

/**
 * Concurrent ingest clients against a real service, recording every event it acknowledged with a
 * 202: what a test that stops, kills or restarts the service checks afterwards. Each client sends
 * single events and batches with unique message ids until stopped, or until its connection dies
 * with the process (that request was never acknowledged).
 */
export interface Ack {
  eventId: string;
  messageId: string;
  identity: string;
}

export interface IngestLoad {
  readonly acks: Ack[];
  /** Requests answered with anything but 202 (503 while draining, 429, …). */
  refused(): number;
  /** Clients whose connection died mid-request. */
  cutOff(): number;
  /** Stops sending and waits for every client's last request. */
  stop(): Promise<void>;
}

export interface IngestLoadOptions {
  /** One ingest key per client (each has its own rate-limit budget). */
  keys: string[];
  /** Every third request is a batch of 1 to this many events (default 5); the others single events. */
  maxBatch?: number;
  /** Sets the message ids of this load apart from another's on the same database. */
  tag?: string;
}

export const post = async (url: string, key: string, body: unknown) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/** Creates `n` ingest keys through the API with the admin key. */
export async function createIngestKeys(base: string, adminKey: string, n: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await post(`${base}/tenant/apikeys`, adminKey, { name: `load ${i}`, scopes: ['ingest'] });
      if (res.status !== 200) throw new Error(`creating an ingest key answered ${res.status}`);
      return String((res.body.data as { api_key: string }).api_key);
    }),
  );
}

export function startIngestLoad(base: string, opts: IngestLoadOptions): IngestLoad {
  const acks: Ack[] = [];
  const maxBatch = opts.maxBatch ?? 5;
  const tag = opts.tag ?? 'c';
  let stopped = false;
  let refused = 0;
  let cutOff = 0;

  async function client(n: number, key: string) {
    const identity = `client-${tag}${n}@load.test`;
    for (let i = 0; !stopped; i++) {
      const size = i % 3 === 2 ? 1 + (i % maxBatch) : 0;
      const events = Array.from({ length: Math.max(1, size) }, (_, j) => ({
        event_type: 'track',
        event_name: 'Load Test',
        identity,
        anonymous_id: randomUUID(),
        payload: { client: n, seq: i, part: j },
        message_id: `${tag}${n}-r${i}-e${j}`,
      }));
      try {
        if (size === 0) {
          const res = await post(`${base}/api/ingest`, key, events[0]);
          if (res.status === 202)
            acks.push({ eventId: String(res.body.event_id), messageId: events[0]!.message_id, identity });
          else refused++;
        } else {
          const res = await post(`${base}/tenant/ingest/batch`, key, events);
          if (res.status === 202) {
            (res.body.event_ids as string[]).forEach((eventId, j) => {
              acks.push({ eventId, messageId: events[j]!.message_id, identity });
            });
          } else refused++;
        }
      } catch {
        cutOff++;
        return;
      }
    }
  }

  const loops = opts.keys.map((key, i) => client(i, key));
  return {
    acks,
    refused: () => refused,
    cutOff: () => cutOff,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/**
 * The acknowledged events that are not stored exactly once with their own message id: every list
 * is empty when the service kept its promise.
 */
export async function unkeptAcks(
  db: Db,
  acks: readonly Ack[],
): Promise<{ missing: Ack[]; duplicated: string[]; wrongMessage: Ack[] }> {
  const byId = new Map<string, { message_id: string; n: number }>();
  // In slices: a test may check hundreds of thousands of acknowledgements.
  for (let i = 0; i < acks.length; i += 20_000) {
    const ids = acks.slice(i, i + 20_000).map((a) => a.eventId);
    const { rows } = await db.query<{ id: string; message_id: string; n: number }>(
      `SELECT id, min(message_id) AS message_id, count(*)::int AS n
         FROM events WHERE id = ANY($1::text[]) GROUP BY id`,
      [ids],
    );
    for (const r of rows) byId.set(r.id, r);
  }
  return {
    missing: acks.filter((a) => !byId.has(a.eventId)),
    duplicated: [...byId].filter(([, r]) => r.n !== 1).map(([id]) => id),
    wrongMessage: acks.filter((a) => byId.has(a.eventId) && byId.get(a.eventId)!.message_id !== a.messageId),
  };
}
