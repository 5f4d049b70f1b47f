/**
 * Issue 2: resident memory of the service process (VmRSS, and the peak VmHWM) on each engine:
 * after a first start on an empty database, after a start on an existing one, and after 100,000
 * events sent through POST /tenant/ingest/batch (1000-event batches) while the in-process workers
 * apply them. Targets: < 150 MB on PostgreSQL (the server's own memory is not the service's); on
 * PGlite, below the ≈ 780 MB measured while planning, and < 400 MB as this project's own bar.
 */
import { randomUUID } from 'node:crypto';
import { type EngineName, engines, memoryOf, note, report, type Service, sleep, startService } from './lib';

const EVENTS = 100_000;
const BATCH = 1000;
const CONCURRENCY = 2;
const CUSTOMERS = 10_000;
/** How long the workers get to apply the backlog after the last batch, before the final reading. */
const PROCESSING_WINDOW_MS = 60_000;

interface Variant {
  label: string;
  engine: EngineName;
  env: Record<string, string>;
  target: number;
}

async function variants(): Promise<Variant[]> {
  const out: Variant[] = [];
  for (const engine of await engines()) {
    if (engine === 'pglite') {
      out.push({ label: 'pglite', engine, env: {}, target: 400 });
      out.push({ label: 'pglite in-process', engine, env: { PGLITE_IN_PROCESS: '1' }, target: 400 });
    } else {
      out.push({ label: engine, engine, env: {}, target: 150 });
    }
  }
  return out;
}

/** Realistic traffic: browsing, sign-ups with traits, and orders from a pool of customers. */
function makeBatch(ids: string[], seq: number): string {
  const events = [];
  for (let i = 0; i < BATCH; i++) {
    const n = seq * BATCH + i;
    const c = n % CUSTOMERS;
    const anonymous_id = ids[c]!;
    const kind = n % 20;
    if (kind === 0) {
      events.push({
        event_type: 'identify',
        event_name: 'Signed Up',
        anonymous_id,
        identity: `customer${c}@example.com`,
        payload: { email: `customer${c}@example.com`, first_name: `Name${c}`, plan: c % 3 ? 'free' : 'pro' },
      });
    } else if (kind === 1) {
      events.push({
        event_type: 'order',
        event_name: 'Order Completed',
        anonymous_id,
        payload: {
          order_id: `ord_${n}`,
          total: 10 + (n % 90),
          currency: 'EUR',
          items: [{ product_id: `sku_${n % 50}`, name: `Product ${n % 50}`, price: 10, quantity: 1 }],
        },
      });
    } else {
      events.push({
        event_type: kind < 10 ? 'page' : 'track',
        event_name: kind < 10 ? 'Viewed Page' : 'Clicked',
        anonymous_id,
        payload: { path: `/products/${n % 500}`, referrer: 'https://search.example/', position: kind },
      });
    }
  }
  return JSON.stringify(events);
}

/** Sends EVENTS events in BATCH-sized requests, CONCURRENCY at a time; returns accepted events/s. */
async function ingest(svc: Service): Promise<{ rate: number; refused: string[] }> {
  const ids = Array.from({ length: CUSTOMERS }, () => randomUUID());
  const batches = EVENTS / BATCH;
  let next = 0;
  let accepted = 0;
  const refused: string[] = [];
  const started = Date.now();
  const lane = async () => {
    while (next < batches) {
      const seq = next++;
      const res = await fetch(`${svc.url}/tenant/ingest/batch`, {
        method: 'POST',
        headers: { 'x-api-key': svc.adminKey, 'content-type': 'application/json' },
        body: makeBatch(ids, seq),
      });
      const text = await res.text();
      if (res.status === 202) accepted += BATCH;
      else if (refused.length < 3) refused.push(`${res.status} ${text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return { rate: accepted / ((Date.now() - started) / 1000), refused };
}

const countProcessed = (svc: Service) =>
  svc.withDb(async (db) => {
    const { rows } = await db.query<{ total: number; done: number }>(
      // Processed: off the backlog (there is no mark on the event any more; migration 0026).
      `SELECT total, total - waiting AS done
         FROM (SELECT (SELECT count(*) FROM events) AS total, (SELECT count(*) FROM event_backlog) AS waiting) c`,
    );
    return rows[0]!;
  });

export default async function run(): Promise<void> {
  for (const v of await variants()) {
    const name = `memory ${v.label}`;
    const under = (mb: number) => ({ target: `< ${v.target} MB`, pass: mb < v.target });

    // 1. The very first start of an empty database, as a new user runs it.
    const first = await startService({ engine: v.engine, env: v.env, database: 'empty' });
    try {
      await sleep(2000);
      const m = memoryOf(first.pid);
      report({
        name: `${name} after first start (empty database)`,
        value: m.rssMb,
        unit: 'MB',
        ...under(m.rssMb),
      });
      note(`peak during first start (VmHWM): ${m.hwmMb.toFixed(0)} MB`);
    } finally {
      await first.stop();
    }

    // 2. A start on an existing database, then 100k events.
    const svc = await startService({ engine: v.engine, env: v.env });
    try {
      await sleep(2000);
      const idle = memoryOf(svc.pid);
      report({ name: `${name} after start`, value: idle.rssMb, unit: 'MB', ...under(idle.rssMb) });

      const { rate, refused } = await ingest(svc);
      if (refused.length > 0) note(`refused batches, e.g.: ${refused.join(' | ')}`);
      const loaded = memoryOf(svc.pid);
      report({
        name: `${name} after ${EVENTS / 1000}k events`,
        value: loaded.rssMb,
        unit: 'MB',
        ...under(loaded.rssMb),
      });
      note(`batch ingest ${rate.toFixed(0)} events/s (${CONCURRENCY} concurrent 1000-event batches)`);

      // The workers keep applying the backlog; PostgreSQL can be asked how far they got.
      const started = Date.now();
      let progress = '';
      while (Date.now() - started < PROCESSING_WINDOW_MS) {
        await sleep(2000);
        if (v.engine !== 'postgres') continue;
        const p = await countProcessed(svc);
        progress = `${p.done} of ${p.total} events applied`;
        if (p.done >= p.total) break;
      }
      const after = memoryOf(svc.pid);
      report({
        name: `${name} peak while ingesting and applying ${EVENTS / 1000}k events`,
        value: after.hwmMb,
        unit: 'MB',
        ...under(after.hwmMb),
      });
      note(
        `RSS ${after.rssMb.toFixed(0)} MB after ${((Date.now() - started) / 1000).toFixed(0)} s of processing`,
      );
      if (v.engine !== 'postgres') {
        await svc.halt();
        const p = await countProcessed(svc);
        progress = `${p.done} of ${p.total} events applied`;
      }
      note(`${progress} by the workers in that time`);
    } finally {
      await svc.stop();
    }
  }
}
