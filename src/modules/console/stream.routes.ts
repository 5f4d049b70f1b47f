import { Type } from 'typebox';
import { AppError, validationError } from '../../platform/errors';
import { principalOf, workspaceOf } from '../../platform/http/principal';
import { sessionTokenOf } from '../../platform/http/session-cookie';
import type { App, AppDeps } from '../../platform/http/types';
import { EVENT_TYPES } from '../ingest';
import { createEventStreamHub } from './event-stream';
import { STREAM_LIMITS } from './stream-limits';

const StreamQuery = Type.Object(
  {
    type: Type.Optional(
      Type.String({
        maxLength: 100,
        description: `Comma-separated event types to show (${EVENT_TYPES.join(', ')}); all when absent.`,
      }),
    ),
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Only events with exactly this name.' }),
    ),
  },
  { additionalProperties: false },
);

/** `GET /tenant/events/stream`: the console's live events (server-sent events; docs/console.md). */
export function registerStreamRoutes(app: App, deps: AppDeps): void {
  // Background work: on PGlite the polls wait behind requests (the worker lane), never ahead of them.
  const hub = createEventStreamHub(deps.db.lane('worker'), deps.log);
  // Open streams never go idle: they end before the server waits for its connections to close.
  app.addHook('preClose', async () => hub.close());

  app.get(
    '/tenant/events/stream',
    {
      config: { auth: 'read' },
      schema: {
        tags: ['console'],
        security: [{ apiKey: [] }],
        summary:
          'The workspace’s events as they arrive, as server-sent events (`event: event`, `event: dropped` when a slow reader missed some).',
        description:
          `Each message is \`event: event\` with data \`{id, type, event_name, anonymous_id, identity, occurred_at, received_at, payload}\`; ` +
          `a comment line every ${STREAM_LIMITS.heartbeatMs / 1000} s. At most ${STREAM_LIMITS.perWorkspace} streams per workspace ` +
          `(429 with Retry-After beyond) and ${STREAM_LIMITS.perProcess} per instance (503). Events left out are counted in ` +
          `\`event: dropped\` with data \`{count}\`. A client that reads so slowly that more than ${STREAM_LIMITS.bufferBytes} bytes ` +
          'wait for it is sent `event: dropped` and `event: end` with data `{reason}`, and the stream ends.',
        querystring: StreamQuery,
        response: {
          200: {
            description: 'A stream of server-sent events.',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
        },
      },
    },
    async (req, reply) => {
      const ws = workspaceOf(req);
      const types = new Set(
        (req.query.type ?? '')
          .split(',')
          .map((t) => t.trim())
          .filter((t) => t !== ''),
      );
      for (const t of types) {
        if (!(EVENT_TYPES as readonly string[]).includes(t)) {
          throw validationError(
            '/type',
            `unknown event type "${t.slice(0, 20)}"; use ${EVENT_TYPES.join(', ')}`,
          );
        }
      }
      // EventSource always asks for it; anything else (a JSON client, a link) would only hang open.
      if (!/\btext\/event-stream\b/.test(req.headers.accept ?? '')) {
        throw new AppError(
          'NOT_ACCEPTABLE',
          'this is a stream of server-sent events: send Accept: text/event-stream',
        );
      }
      hub.admit(ws);

      // The credential is checked again at every heartbeat: signing out or revoking the key ends the stream.
      const who = principalOf(req);
      const token = who.kind === 'session' ? sessionTokenOf(req) : null;
      const rawKey = req.headers['x-api-key'];
      const stillValid = async (): Promise<boolean> => {
        if (token) return (await deps.sessions.resolve(token)) !== null;
        if (typeof rawKey === 'string') return (await deps.keys.resolve(rawKey)) !== null;
        return true;
      };

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      hub.open(ws, { types, name: req.query.name ?? null }, res, stillValid);
    },
  );
}
