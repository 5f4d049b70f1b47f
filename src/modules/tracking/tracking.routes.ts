import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { INGEST_EXEMPTION } from '../../platform/http/audit';
import { applyRateHeaders, rateLimited } from '../../platform/http/auth-hook';
import { principalOf } from '../../platform/http/principal';
import { limitFor } from '../../platform/http/rate-limit';
import type { App, AppDeps } from '../../platform/http/types';
import { writeAccountTraits } from '../accounts';
import { ingestBatch } from '../ingest';
import { rawBodyLimit, registerTrackingBodyParser, TRACKING_LIMITS } from './tracking.body';
import { type MessageType, SHORT_PATHS } from './tracking.mapping';
import { MAX_DETAILS, mapAll, type Outcome, refuse } from './tracking.outcome';
import { AckSchema, BatchSchema, MessageSchema, tags } from './tracking.schemas';
import { registerSettingsRoutes } from './tracking.settings.routes';

/** A batch body's validator without its items' schema (they are mapped one by one instead). */
function envelopeOnly(app: App): FastifySchemaCompiler<unknown> {
  return (route) => {
    if (route.httpPart !== 'body') return app.validatorCompiler!(route);
    const { properties, ...rest } = route.schema as { properties: Record<string, unknown> };
    return app.validatorCompiler!({
      ...route,
      schema: { ...rest, properties: { ...properties, batch: { type: 'array' } } },
    });
  };
}

const BATCH_URLS = new Set(['/v1/batch', '/v1/import', '/v1/b']);
const limitOf = (req: FastifyRequest) =>
  BATCH_URLS.has(req.routeOptions.url ?? '') ? TRACKING_LIMITS.batchBytes : TRACKING_LIMITS.eventBytes;

export function registerTrackingRoutes(app: App, deps: AppDeps): void {
  /** Stores what the messages came to and answers Segment's way. */
  async function accept(req: FastifyRequest, outcome: Outcome) {
    if (outcome.events.length === 0) {
      const first = outcome.refused[0];
      throw refuse(
        `nothing could be stored${first ? ` (${first.path} ${first.message})` : ''}`,
        outcome.refused,
      );
    }
    const key = principalOf(req);
    // The one way into the log: normalised and group-committed like every other event.
    await ingestBatch(deps.events, key, outcome.events);
    if (outcome.groups.length > 0) await writeAccountTraits(deps.db, key.workspaceId, outcome.groups);
    return outcome.refused.length > 0
      ? { success: true as const, refused: outcome.refused.slice(0, MAX_DETAILS) }
      : { success: true as const };
  }

  const single = (scope: App, type: MessageType, url: string, summary: string) =>
    scope.post(
      url,
      {
        config: { auth: 'ingest', cors: true, anyBodyType: true, audit: { exempt: INGEST_EXEMPTION } },
        bodyLimit: rawBodyLimit(TRACKING_LIMITS.eventBytes),
        schema: { tags, summary, body: MessageSchema, response: { 200: AckSchema } },
      },
      async (req) => {
        const receivedAt = Date.now();
        return accept(req, mapAll([req.body], type, { receivedAt, batch: false }));
      },
    );

  const batch = (scope: App, url: string, summary: string) =>
    scope.post(
      url,
      {
        config: {
          auth: 'ingest',
          cors: true,
          anyBodyType: true,
          rateTier: 'batch',
          audit: { exempt: INGEST_EXEMPTION },
        },
        bodyLimit: rawBodyLimit(TRACKING_LIMITS.batchBytes),
        // The batch tier is charged per message, as the native batch route does, before the
        // messages are mapped; an oversized message refuses the request as Segment does (400).
        preValidation: async (req, reply) => {
          const body = req.body as Record<string, unknown> | undefined;
          const messages = body?.batch;
          if (
            !Array.isArray(messages) ||
            messages.length === 0 ||
            messages.length > TRACKING_LIMITS.batchMessages
          ) {
            throw refuse(`batch must hold 1 to ${TRACKING_LIMITS.batchMessages} messages`, [
              {
                path: '/batch',
                message: `must be an array of 1 to ${TRACKING_LIMITS.batchMessages} messages`,
              },
            ]);
          }
          const key = principalOf(req);
          const d = await deps.limits.consume(
            key.id,
            'batch',
            messages.length,
            limitFor(key.workspaceSettings, 'batch'),
          );
          applyRateHeaders(reply, d);
          if (!d.allowed) throw rateLimited(d.resetSeconds);
          const oversized = messages.flatMap((m, i) =>
            Buffer.byteLength(JSON.stringify(m) ?? '') > TRACKING_LIMITS.eventBytes
              ? [
                  {
                    path: `/batch/${i}`,
                    message: `must be at most ${TRACKING_LIMITS.eventBytes} bytes as JSON`,
                  },
                ]
              : [],
          );
          if (oversized.length > 0) {
            throw refuse(
              `a message is over Segment's limit of 32 KB per event (${oversized[0]!.path}); nothing was stored`,
              oversized,
            );
          }
        },
        // The body's validator checks the envelope only; each message is checked as the event it
        // becomes (mapAll), so a bad one is named and left out instead of refusing the batch. The
        // OpenAPI document still shows the whole schema.
        validatorCompiler: envelopeOnly(scope),
        schema: { tags, summary, body: BatchSchema, response: { 200: AckSchema } },
      },
      async (req) => {
        const receivedAt = Date.now();
        const body = req.body as { batch: unknown[]; sentAt?: unknown; context?: unknown };
        return accept(
          req,
          mapAll(body.batch, null, { receivedAt, sentAt: body.sentAt, context: body.context, batch: true }),
        );
      },
    );

  // Their own scope: these routes read JSON under any content type, gzip included
  // (tracking.body.ts); the rest of the API keeps its one JSON parser.
  void app.register((instance, _opts, done) => {
    const scope = instance as unknown as App;
    registerTrackingBodyParser(scope, limitOf);
    for (const [short, type] of Object.entries(SHORT_PATHS)) {
      single(
        scope,
        type,
        `/v1/${type}`,
        `Segment \`${type}\` call: one message; 200 {"success":true} once stored.`,
      );
      single(scope, type, `/v1/${short}`, `Short form of /v1/${type} (Segment's browser library).`);
    }
    batch(scope, '/v1/batch', 'Segment batch: up to 500 KB of messages of any type; 200 once stored.');
    batch(scope, '/v1/import', "Same as /v1/batch (Segment's name for historical imports).");
    batch(scope, '/v1/b', "Short form of /v1/batch (Segment's browser library, batching mode).");
    done();
  });

  registerSettingsRoutes(app);
}
