import { Type } from 'typebox';
import { revenueSince } from './modules/commerce';
import { eventMinutesSince, receivedAtOfSeq } from './modules/ingest';
import { backlogOf, countDeadLetters } from './modules/processing';
import { countProfiles } from './modules/profiles';
import type { Db } from './platform/db';
import { Envelope, ok } from './platform/http/envelope';
import { workspaceOf } from './platform/http/principal';
import type { App, AppDeps } from './platform/http/types';

/**
 * `GET /tenant/stats`, the console's overview (docs/console.md, "Overview"). It reads four modules'
 * tables (ingest, profiles, commerce, processing) and the processing module sits above the workflows,
 * so it lives at the composition root, beside the routes of the CLI's commands.
 */

const MINUTES = 60;
/** Revenue covers the completed orders placed in the last 30 days. */
export const REVENUE_DAYS = 30;
/** The profile counts read every profile of the workspace: at most once a minute per workspace and process. */
const PROFILE_COUNTS_TTL_MS = 60_000;

export const StatsSchema = Type.Object(
  {
    generated_at: Type.String({ format: 'date-time' }),
    events_per_minute: Type.Array(
      Type.Object({ minute: Type.String({ format: 'date-time' }), count: Type.Integer({ minimum: 0 }) }),
      { description: 'The last 60 minutes, oldest first (the last one is the current, partial minute).' },
    ),
    profiles: Type.Integer({ minimum: 0, description: 'Live (not merged) profiles; up to a minute old.' }),
    profiles_new_today: Type.Integer({
      minimum: 0,
      description: 'Profiles created since midnight UTC (and still live); up to a minute old.',
    }),
    revenue: Type.Array(
      Type.Object({ currency: Type.String(), total: Type.Number(), orders: Type.Integer({ minimum: 0 }) }),
      {
        description: `Completed orders placed in the last ${REVENUE_DAYS} days, per currency, largest first (≤ 20).`,
      },
    ),
    ingestion_backlog: Type.Integer({
      minimum: 0,
      description: 'Events received but not processed yet (counted up to 100,001).',
    }),
    processing_lag_seconds: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
      description: 'Age of the oldest event waiting to be processed; null when none waits.',
    }),
    dead_letters: Type.Integer({
      minimum: 0,
      description: 'Events that could not be applied (counted up to 100,001).',
    }),
  },
  { $id: 'WorkspaceStats' },
);

interface CachedCounts {
  at: number;
  value: Promise<{ profiles: number; created_since: number }>;
  day: number;
}

export function registerConsoleStatsRoutes(app: App, deps: AppDeps): void {
  const profileCounts = new Map<string, CachedCounts>();
  // The profile counts are a pass over the workspace's profiles: on the analytics lane (never in
  // the way of requests or processing), shared by concurrent requests, kept for a minute.
  const countsOf = (db: Db, ws: string, midnight: Date) => {
    const now = Date.now();
    const hit = profileCounts.get(ws);
    if (hit && now - hit.at < PROFILE_COUNTS_TTL_MS && hit.day === midnight.getTime()) return hit.value;
    const value = countProfiles(db.lane('analytics'), ws, midnight);
    if (profileCounts.size >= 10_000) profileCounts.clear();
    profileCounts.set(ws, { at: now, value, day: midnight.getTime() });
    value.catch(() => profileCounts.delete(ws));
    return value;
  };

  app.get(
    '/tenant/stats',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['console'],
        security: [{ apiKey: [] }],
        summary:
          'The workspace at a glance: events per minute over the last hour, profiles, revenue, backlog.',
        response: { 200: Envelope(StatsSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const db = deps.db;
      const now = new Date();
      const thisMinute = Math.floor(now.getTime() / 60_000) * 60_000;
      const first = new Date(thisMinute - (MINUTES - 1) * 60_000);
      const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
      const [minutes, counts, revenue, backlog, deadLetters] = await Promise.all([
        eventMinutesSince(db, ws, first),
        countsOf(db, ws, midnight),
        revenueSince(db, ws, new Date(now.getTime() - REVENUE_DAYS * 86_400_000)),
        backlogOf(db, ws),
        countDeadLetters(db, ws),
      ]);
      const oldest = backlog.oldest_seq === null ? null : await receivedAtOfSeq(db, backlog.oldest_seq);
      const byMinute = new Map(minutes.map((m) => [new Date(m.minute).getTime(), m.count]));
      return ok({
        generated_at: now.toISOString(),
        events_per_minute: Array.from({ length: MINUTES }, (_, i) => {
          const t = first.getTime() + i * 60_000;
          return { minute: new Date(t).toISOString(), count: byMinute.get(t) ?? 0 };
        }),
        profiles: counts.profiles,
        profiles_new_today: counts.created_since,
        revenue: revenue.map((r) => ({ currency: r.currency, total: Number(r.total), orders: r.orders })),
        ingestion_backlog: backlog.waiting,
        processing_lag_seconds:
          oldest === null ? null : Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 100) / 10),
        dead_letters: deadLetters,
      });
    },
  );
}
