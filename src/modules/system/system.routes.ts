import { Type } from 'typebox';
import { AppError } from '../../platform/errors';
import type { App, AppDeps } from '../../platform/http/types';

export function registerSystemRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/health',
    {
      config: { auth: 'public' },
      schema: {
        tags: ['system'],
        summary: 'Liveness: 200 once the service serves.',
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
        summary: 'Readiness: 200 when storage answers, else 503.',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
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
          'This process: API key and workspace settings cache counters (operator token; 404 when none is configured).',
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
            }),
          }),
        },
      },
    },
    async () => ({
      status: 'success' as const,
      data: { key_cache: deps.keys.stats(), settings_cache: deps.settings.stats() },
    }),
  );

  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());
}
