/**
 * What the retention indexes of migration 0039 cost where rows are written (docs/decisions.md,
 * "Retention"), on each engine: each write path's statement of 1000 rows, timed with its index and
 * without it, in ABBA order (so the table's growth and the machine's drift fall on both sides), on a
 * database of its own (PGlite in memory; a fresh PostgreSQL schema). Ceiling: the same statement
 * without the index, same run. The paths: the ingest INSERT of events (`events_received_idx`), the
 * processed mark (an event_profiles row and six property rows per event, `event_properties_seq_idx`),
 * lineage rows (`profile_lineage_recorded_idx`) and outbox facts (`outbox_created_idx`).
 *
 *   npm run bench -- retention-indexes
 *   BENCH_INDEX_ROUNDS=10 BENCH_ENGINES=postgres npm run bench -- retention-indexes
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config';
import { type AppliedEvent, markEventsApplied } from '../src/modules/ingest/applied.repo';
import { insertEvents, type NewEventRow } from '../src/modules/ingest/ingest.repo';
import { writeOutboxMany } from '../src/modules/outbox';
import { insertLineage, type LineageWrite } from '../src/modules/profiles/lineage.repo';
import { type Db, openDb } from '../src/platform/db';
import { migrate } from '../src/platform/db/migrate';
import { newSortableId } from '../src/platform/ids';
import { dropSchema, type EngineName, engines, PG_URL, report } from './lib';

const ROUNDS = Number(process.env.BENCH_INDEX_ROUNDS ?? 6);
const STATEMENTS = 10;
const N = 1000;

interface WritePath {
  index: string;
  create: string;
  /** Untimed work before each statement (rows it needs); its answer is handed to `run`. */
  prepare?: () => Promise<unknown>;
  run: (prepared: unknown) => Promise<void>;
}

function paths(db: Db, ws: string): Record<string, WritePath> {
  const profiles = Array.from({ length: 200 }, () => randomUUID());
  let k = 0;
  const eventRows = (): NewEventRow[] =>
    Array.from({ length: N }, () => {
      k++;
      const now = new Date().toISOString();
      return {
        id: newSortableId('evt'),
        workspace_id: ws,
        message_id: null,
        event_type: 'track',
        event_name: 'Product Viewed',
        anonymous_id: randomUUID(),
        identity: `u${k % 5000}@index.bench`,
        payload: {
          price: k % 200,
          sku: `p${k % 1000}`,
          category: 'tea',
          product: { brand: 'acme', size: 2 },
        },
        occurred_at: now,
        received_at: now,
        api_key_id: null,
      };
    });
  return {
    'events (ingest INSERT)': {
      index: 'events_received_idx',
      create: 'CREATE INDEX events_received_idx ON events (workspace_id, received_at)',
      run: async () => {
        await insertEvents(db, eventRows());
      },
    },
    'event_properties (processed mark, 7 rows per event)': {
      index: 'event_properties_seq_idx',
      create: 'CREATE INDEX event_properties_seq_idx ON event_properties (seq)',
      prepare: async () => {
        await insertEvents(db, eventRows());
        const { rows } = await db.query<{ seq: string; payload: unknown }>(
          `SELECT seq, payload FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_profiles p WHERE p.seq = e.seq)
            ORDER BY seq LIMIT $1`,
          [N],
        );
        return rows.map((r, i) => ({
          seq: Number(r.seq),
          profile_id: profiles[i % profiles.length]!,
          payload: r.payload,
        }));
      },
      run: async (applied) => {
        await markEventsApplied(db, applied as AppliedEvent[]);
      },
    },
    profile_lineage: {
      index: 'profile_lineage_recorded_idx',
      create: 'CREATE INDEX profile_lineage_recorded_idx ON profile_lineage (workspace_id, recorded_at)',
      run: async () => {
        const rows: LineageWrite[] = Array.from({ length: N }, (_, i) => ({
          workspace_id: ws,
          profile_id: profiles[i % profiles.length]!,
          path: 'attributes.plan',
          old_value: 'free',
          new_value: 'pro',
          source_type: 'event',
          source_id: 'evt_x',
          merged_from: null,
          occurred_at: new Date().toISOString(),
        }));
        await insertLineage(db, rows);
      },
    },
    outbox: {
      index: 'outbox_created_idx',
      create: 'CREATE INDEX outbox_created_idx ON outbox (workspace_id, created_at)',
      run: async () => {
        await writeOutboxMany(
          db,
          Array.from({ length: N }, (_, i) => ({
            workspaceId: ws,
            type: 'profile.created' as const,
            data: {
              profile_id: profiles[i % profiles.length],
              email: `u${i}@index.bench`,
              attributes: { plan: 'pro' },
            },
          })),
        );
      },
    },
  };
}

async function open(engine: EngineName): Promise<{ db: Db; close: () => Promise<void> }> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const env: Record<string, string> =
    engine === 'pglite'
      ? { DATA_DIR: ':memory:', LOG_LEVEL: 'silent' }
      : { DATA_DIR: ':memory:', LOG_LEVEL: 'silent', DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema };
  const db = await openDb(loadConfig(env));
  return {
    db,
    close: async () => {
      await db.close();
      if (engine === 'postgres') await dropSchema(PG_URL, schema);
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export default async function run(): Promise<void> {
  for (const engine of await engines()) {
    const { db, close } = await open(engine);
    try {
      await migrate(db);
      const ws = randomUUID();
      await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [ws, 'retention indexes']);
      for (const [name, p] of Object.entries(paths(db, ws))) {
        const t = { with: [] as number[], without: [] as number[] };
        let has = true;
        for (let r = 0; r < ROUNDS; r++) {
          for (const v of r % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
            if (v === 'with' && !has) await db.exec(p.create);
            if (v === 'without' && has) await db.exec(`DROP INDEX ${p.index}`);
            has = v === 'with';
            for (let s = 0; s < STATEMENTS; s++) {
              const prepared = p.prepare ? await p.prepare() : undefined;
              const t0 = performance.now();
              await p.run(prepared);
              t[v].push(performance.now() - t0);
            }
          }
        }
        if (!has) await db.exec(p.create);
        const w = median(t.with);
        const wo = median(t.without);
        report({
          name: `${name}: ${N}-row statement with its retention index (${engine})`,
          value: w,
          unit: `ms (+${(((w - wo) * 1000) / N).toFixed(1)} µs a row)`,
          ceiling: { value: wo, unit: 'ms without' },
          target: 'report (docs/decisions.md, "Retention")',
        });
      }
    } finally {
      await close();
    }
  }
}
