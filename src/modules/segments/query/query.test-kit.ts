import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../../platform/db';
import { type CompileContext, compileSegment } from './compile';
import type { EvalOrder, EvalProfile } from './evaluate';
import type { SegmentQuery } from './types';

/**
 * Loading profiles (with their events and orders) straight into the tables the compiler reads, and
 * running a compiled query the way the segments service does. A test of the compiler may write
 * these tables directly: it checks the SQL, not the ingest path.
 */
export const NOW = new Date('2026-01-01T00:00:00.000Z');
export const DAY = 86_400_000;

export async function createWorkspaceRow(db: Queryable): Promise<string> {
  const id = randomUUID();
  await db.query('INSERT INTO workspaces (id, name) VALUES ($1, $2)', [id, `segments ${id}`]);
  return id;
}

export async function clearWorkspace(db: Queryable, ws: string): Promise<void> {
  await db.query('DELETE FROM event_properties WHERE workspace_id = $1', [ws]);
  await db.query('DELETE FROM event_profiles WHERE workspace_id = $1', [ws]);
  await db.query('DELETE FROM events WHERE workspace_id = $1', [ws]);
  await db.query('DELETE FROM orders WHERE workspace_id = $1', [ws]);
  await db.query('DELETE FROM profiles WHERE workspace_id = $1', [ws]);
}

/**
 * Inserts the profiles into `ws`. Their events and orders are also copied into `decoyWs` under the
 * same profile ids, so a sub-query that forgot to correlate on the workspace would count them twice.
 */
export async function loadProfiles(
  db: Queryable,
  ws: string,
  profiles: readonly EvalProfile[],
  decoyWs?: string,
): Promise<void> {
  for (const p of profiles) {
    // The product keeps total_spend equal to the completed orders' sum (commerce), and segment
    // conditions on completed orders read it (compile.ts): a test profile must keep it too.
    if (p.total_spend !== completedSpend(p.orders)) {
      throw new Error(`test profile ${p.id}: total_spend ${p.total_spend} is not its completed orders' sum`);
    }
  }
  const rows = profiles.map((p) => ({
    id: p.id,
    workspace_id: ws,
    email: p.email,
    first_name: p.first_name,
    last_name: p.last_name,
    attributes: p.attributes,
    total_spend: p.total_spend,
    rfm_segment: p.rfm_segment,
    churn_risk_score: p.churn_risk_score,
    predicted_clv: p.predicted_clv,
    created_at: p.created_at.toISOString(),
    updated_at: p.updated_at.toISOString(),
    ...orderSummary(p.orders),
  }));
  await db.query(
    `INSERT INTO profiles (id, workspace_id, email, first_name, last_name, attributes, total_spend,
                           rfm_segment, churn_risk_score, predicted_clv, created_at, updated_at,
                           completed_orders, completed_first_at, completed_last_at)
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, workspace_id uuid, email text,
       first_name text, last_name text, attributes jsonb, total_spend numeric, rfm_segment text,
       churn_risk_score float8, predicted_clv numeric, created_at timestamptz, updated_at timestamptz,
       completed_orders int, completed_first_at timestamptz, completed_last_at timestamptz)`,
    [JSON.stringify(rows)],
  );
  const spaces = decoyWs ? [ws, decoyWs] : [ws];
  const events = spaces.flatMap((w) =>
    profiles.flatMap((p) =>
      p.events.map((e) => ({
        id: `evt_${randomUUID()}`,
        workspace_id: w,
        event_type: e.type,
        event_name: e.name,
        payload: e.payload,
        occurred_at: e.occurred_at.toISOString(),
        profile_id: p.id,
      })),
    ),
  );
  // The log holds the event; event_profiles records the profile it was applied to (migration 0026),
  // event_properties its typed properties (migration 0029), from the function processing uses.
  await db.query(
    `WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, workspace_id uuid, event_type text,
                  event_name text, payload jsonb, occurred_at timestamptz, profile_id uuid)),
          ins AS (INSERT INTO events (id, workspace_id, event_type, event_name, payload, occurred_at)
                  SELECT id, workspace_id, event_type, event_name, payload, occurred_at FROM x
                  RETURNING seq, id, workspace_id, occurred_at, event_type, event_name, payload),
          applied AS (INSERT INTO event_profiles (seq, workspace_id, profile_id, occurred_at, event_type, event_name)
                      SELECT ins.seq, ins.workspace_id, x.profile_id, ins.occurred_at, ins.event_type, ins.event_name
                        FROM ins JOIN x ON x.id = ins.id)
     INSERT INTO event_properties (workspace_id, seq, profile_id, event_name, event_type, occurred_at, path, kind,
                                   num, str, bool)
     SELECT ins.workspace_id, ins.seq, x.profile_id, ins.event_name, ins.event_type, ins.occurred_at, r.path, r.kind,
            r.num, r.str, r.bool
       FROM ins JOIN x ON x.id = ins.id CROSS JOIN LATERAL event_property_rows(ins.payload) r`,
    [JSON.stringify(events)],
  );
  const orders = spaces.flatMap((w) =>
    profiles.flatMap((p) =>
      p.orders.map((o) => ({
        workspace_id: w,
        order_id: `ord_${randomUUID()}`,
        profile_id: p.id,
        status: o.status,
        total: o.total,
        currency: o.currency,
        items: o.items,
        occurred_at: o.occurred_at.toISOString(),
      })),
    ),
  );
  await db.query(
    `INSERT INTO orders (workspace_id, order_id, profile_id, status, total, currency, items, occurred_at,
                         event_id, status_at)
     SELECT workspace_id, order_id, profile_id, status, total, currency, items, occurred_at, 'evt_test',
            occurred_at
       FROM jsonb_to_recordset($1::jsonb) AS x(workspace_id uuid, order_id text, profile_id uuid,
         status text, total numeric, currency text, items jsonb, occurred_at timestamptz)`,
    [JSON.stringify(orders)],
  );
}

/** The completed-order summary commerce keeps on the profile row (migration 0021). */
function orderSummary(orders: readonly EvalOrder[]) {
  const times = orders.filter((o) => o.status === 'completed').map((o) => o.occurred_at.getTime());
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    completed_orders: times.length,
    completed_first_at: times.length > 0 ? iso(Math.min(...times)) : null,
    completed_last_at: times.length > 0 ? iso(Math.max(...times)) : null,
  };
}

/** The sum of the completed orders' totals, in whole cents as numeric(18,2) sums them. */
export function completedSpend(orders: readonly EvalOrder[]): number {
  const cents = orders
    .filter((o) => o.status === 'completed')
    .reduce((s, o) => s + BigInt(Math.round(o.total * 100)), 0n);
  return Number(cents) / 100;
}

/** The ids the compiled query selects in `ws`, sorted, wrapped exactly as docs/segments.md says. */
export async function selectMatching(
  db: Queryable,
  ws: string,
  query: SegmentQuery,
  ctx: Omit<CompileContext, 'firstParam'>,
): Promise<string[]> {
  const { sql, params, joins } = compileSegment(query, { ...ctx, firstParam: 2 });
  const r = await db.query<{ id: string }>(
    `SELECT p.id FROM profiles p ${joins} WHERE p.workspace_id = $1 AND p.merged_into IS NULL AND (${sql})`,
    [ws, ...params],
  );
  return r.rows.map((x) => x.id).sort();
}

/**
 * A profile with nothing in it, to spread test-specific fields over; total_spend follows the
 * orders given unless it is given too.
 */
export function blankProfile(over: Partial<EvalProfile> = {}): EvalProfile {
  return {
    total_spend: completedSpend(over.orders ?? []),
    id: randomUUID(),
    email: null,
    first_name: null,
    last_name: null,
    rfm_segment: null,
    predicted_clv: null,
    churn_risk_score: null,
    created_at: new Date(NOW.getTime() - 10 * DAY),
    updated_at: new Date(NOW.getTime() - DAY),
    attributes: {},
    events: [],
    orders: [],
    ...over,
  };
}
