/**
 * Issue 25: the Segment-compatible tracking API. `POST /v1/batch` with 100-message batches from
 * concurrent senders, as the Segment and RudderStack clients send them (Basic auth, messageIds,
 * context), plain and gzip, beside the native `POST /tenant/ingest/batch` with the same 100 events
 * in the same run (its own format, message ids too): accepted events/s. Target: each ≥ 0.80 of
 * the native rate. The three run in alternating rounds and each figure is the mean of its rounds,
 * so a busy moment of the shared machine or the table's growth weighs on all of them alike.
 *
 * The service runs as ROLE=api, as in bench/ingest: the ingest path's figures, without the
 * processing worker competing for the two cores.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { engines, type LoadResult, load, note, report, startService } from './lib';

const SECONDS = 5;
const BATCH = 100;
const CONNECTIONS = 8;
/**
 * Distinct bodies per load run: every event carries a message id, and a body sent twice would be
 * de-duplicated (cheaper). 2,000 × 100 events cover ≈ 28k events/s over the warm-up and the run; a
 * faster run cycles, which the notes say.
 */
const BODIES = Number(process.env.BENCH_SDK_BODIES ?? 2000);

/** What a server library (analytics-node, rudder-sdk-node) puts in every message's context. */
const CONTEXT = { library: { name: 'analytics-node-next', version: 'latest' } };

/** The same product view in each format, fresh ids: Segment's message, and the native event. */
function segmentMessage(tag: string, i: number) {
  return {
    type: 'track',
    messageId: `${tag}-${i}-${randomUUID()}`,
    anonymousId: randomUUID(),
    event: 'Product Viewed',
    properties: {
      product_id: `p-${i % 500}`,
      price: 19.99,
      currency: 'USD',
      category: 'mugs',
      position: i % 20,
    },
    context: CONTEXT,
    timestamp: new Date().toISOString(),
  };
}

function nativeEvent(tag: string, i: number) {
  const m = segmentMessage(tag, i);
  return {
    event_type: 'track',
    event_name: m.event,
    anonymous_id: m.anonymousId,
    message_id: m.messageId,
    payload: m.properties,
    timestamp: m.timestamp,
  };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function segmentBodies(tag: string): string[] {
  return range(BODIES).map((b) =>
    JSON.stringify({
      batch: range(BATCH).map((i) => segmentMessage(tag, b * BATCH + i)),
      sentAt: new Date().toISOString(),
    }),
  );
}

const nativeBodies = (tag: string): string[] =>
  range(BODIES).map((b) => JSON.stringify(range(BATCH).map((i) => nativeEvent(tag, b * BATCH + i))));

/**
 * Two rounds, the second in reverse order (native, plain, gzip, then gzip, plain, native): a trend
 * over the run (the shared machine getting busier, the table growing) weighs on all three alike.
 */
const ORDER = [
  ['native', 'plain', 'gzip'],
  ['gzip', 'plain', 'native'],
] as const;

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const svc = await startService({ engine, env: { ROLE: 'api' } });
    const basic = `Basic ${Buffer.from(`${svc.adminKey}:`).toString('base64')}`;
    const json = { 'content-type': 'application/json' };
    const variants = {
      native: {
        url: '/tenant/ingest/batch',
        headers: { ...json, 'x-api-key': svc.adminKey },
        bodies: (tag: string): Array<string | Buffer> => nativeBodies(tag),
      },
      plain: {
        url: '/v1/batch',
        headers: { ...json, authorization: basic },
        bodies: (tag: string): Array<string | Buffer> => segmentBodies(tag),
      },
      gzip: {
        url: '/v1/batch',
        headers: { ...json, authorization: basic, 'content-encoding': 'gzip' },
        bodies: (tag: string): Array<string | Buffer> => segmentBodies(tag).map((b) => gzipSync(b)),
      },
    } as const;
    const sample = segmentBodies('sample')[0]!;
    note(
      `a 100-message body: ${Buffer.byteLength(sample)} bytes as JSON, ${gzipSync(sample).length} gzipped`,
    );
    const totals = { native: [] as LoadResult[], plain: [] as LoadResult[], gzip: [] as LoadResult[] };
    try {
      for (const [round, names] of ORDER.entries()) {
        for (const name of names) {
          const v = variants[name];
          const r = await load({
            url: `${svc.url}${v.url}`,
            method: 'POST',
            headers: v.headers,
            bodies: v.bodies(`${name}-${round}`),
            connections: CONNECTIONS,
            duration: SECONDS,
          });
          totals[name].push(r);
          note(
            `round ${round + 1} ${name}: ${Math.round(r.rps * BATCH)} events/s, p50 ${r.p50} ms, p99 ${r.p99} ms` +
              `${r.non2xx || r.errors ? `, ${r.non2xx} non-2xx, ${r.errors} errors` : ''}` +
              `${r.requests > BODIES / 2 ? ' (bodies may have cycled: some messages re-sent)' : ''}`,
          );
        }
      }
      const eventsPerSecond = (rs: LoadResult[]) => (rs.reduce((a, r) => a + r.rps, 0) / rs.length) * BATCH;
      const clean = (rs: LoadResult[]) => rs.every((r) => r.non2xx === 0 && r.errors === 0);
      const ceiling = eventsPerSecond(totals.native);
      for (const label of ['plain', 'gzip'] as const) {
        const value = eventsPerSecond(totals[label]);
        report({
          name: `sdk ${engine} /v1/batch of ${BATCH} (${label}) @${CONNECTIONS}`,
          value,
          unit: 'events/s',
          ceiling: { value: ceiling, unit: 'events/s (native /tenant/ingest/batch, same run)' },
          target: '≥ 0.80 of ceiling',
          pass: value >= 0.8 * ceiling && clean(totals[label]),
        });
      }
    } finally {
      await svc.stop();
    }
  }
}
