import { Type } from 'typebox';
import { AppError } from '../../platform/errors';
import type { App, AppDeps } from '../../platform/http/types';
import { countBacklog } from '../processing';

/** The stats are this process's own and must answer while storage is down: the backlog waits this long. */
const BACKLOG_ANSWER_MS = 500;

async function backlogWithin(deps: AppDeps, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([countBacklog(deps.db).catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function registerSystemRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/health',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['system'],
        summary: 'Liveness: 200 as soon as the process has bound its port, while it starts too.',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/ready',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['system'],
        summary: 'Readiness: 200 once the service serves and storage answers, else 503.',
        description:
          '`503 UNAVAILABLE` with `Retry-After` while the service starts, its `message` saying what it ' +
          'is doing (`starting: migrating the database: 3 of 24`) and `details[0]` naming the phase ' +
          '(`{"path":"phase","message":"opening|creating|recovering|migrating|loading"}`); also ' +
          'whenever storage does not answer (no details then).',
        response: {
          200: Type.Object({ status: Type.Literal('ok') }),
          503: { $ref: 'ErrorEnvelope#', description: 'Starting (see `details`), or storage not answering.' },
        },
      },
    },
    async () => {
      try {
        await deps.db.query('SELECT 1');
      } catch (err) {
        throw new AppError('UNAVAILABLE', 'storage is not answering', {
          cause: err,
          headers: { 'retry-after': '5' },
        });
      }
      return { status: 'ok' as const };
    },
  );

  app.get(
    '/system/stats',
    {
      config: { auth: 'operator', rateTier: 'none' },
      schema: {
        tags: ['operator'],
        summary:
          'This process: API key and workspace settings cache counters, the preflight origin index, and the events waiting to be processed (operator token; 404 when none is configured).',
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            data: Type.Object({
              key_cache: Type.Object({
                hits: Type.Integer(),
                misses: Type.Integer(),
                entries: Type.Integer(),
                trusted: Type.Boolean(),
                peers: Type.Integer(),
              }),
              settings_cache: Type.Object({
                hits: Type.Integer(),
                misses: Type.Integer(),
                entries: Type.Integer(),
                trusted: Type.Boolean(),
                peers: Type.Integer(),
              }),
              origin_index: Type.Object({
                keys: Type.Integer(),
                patterns: Type.Integer(),
                full_loads: Type.Integer(),
                key_reads: Type.Integer(),
                stale: Type.Boolean(),
              }),
              processing: Type.Object({
                backlog: Type.Union([Type.Integer(), Type.Null()], {
                  description:
                    'Events stored and not yet processed (by any process); null when storage did not answer within 0.5 s.',
                }),
              }),
            }),
          }),
        },
      },
    },
    async () => ({
      status: 'success' as const,
      data: {
        key_cache: deps.keys.stats(),
        settings_cache: deps.settings.stats(),
        origin_index: originIndexStats(deps),
        processing: { backlog: await backlogWithin(deps, BACKLOG_ANSWER_MS) },
      },
    }),
  );

  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());
}

function originIndexStats(deps: AppDeps) {
  const o = deps.origins.stats();
  return {
    keys: o.owners,
    patterns: o.patterns,
    full_loads: o.fullLoads,
    key_reads: o.ownerLoads,
    stale: o.stale,
  };
}
