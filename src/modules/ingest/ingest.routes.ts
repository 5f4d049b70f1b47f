import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { AppError } from '../../platform/errors';
import { applyRateHeaders, rateLimited } from '../../platform/http/auth-hook';
import { limitFor } from '../../platform/http/rate-limit';
import type { App, AppDeps } from '../../platform/http/types';
import { checkBatch, checkEvent, type RuleError } from './ingest.rules';
import {
  BatchAckSchema,
  IngestAckSchema,
  IngestBatchSchema,
  IngestEventSchema,
  LIMITS,
} from './ingest.schemas';
import { ingestBatch, ingestEvent } from './ingest.service';

const tags = ['ingestion'];
const security = [{ apiKey: [] }];

/** Leading item index of a batch pointer, so details come out in item order. */
const itemIndex = (path: string): number => Number(/^\/(\d+)/.exec(path)?.[1] ?? -1);

/**
 * The app's body validator plus the ingest rules, reported together: a client sees every problem
 * of every item in one 400, whichever check found it.
 */
function withRules(
  app: App,
  rules: (body: unknown, now: number) => RuleError[],
  ordered: boolean,
): FastifySchemaCompiler<unknown> {
  return (route) => {
    type Check = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };
    const schemaCheck = app.validatorCompiler!(route) as Check;
    if (route.httpPart !== 'body') return schemaCheck;
    const check: Check = (data) => {
      const ok = schemaCheck(data);
      const extra = rules(data, Date.now()) as unknown as FastifySchemaValidationError[];
      if (ok && extra.length === 0) return true;
      const schemaErrors = (ok ? null : schemaCheck.errors) ?? [];
      // One message per field: a value the schema already refused is not reported again.
      const refused = new Set(schemaErrors.map((e) => e.instancePath));
      const errors = [...schemaErrors, ...extra.filter((e) => !refused.has(e.instancePath))];
      if (ordered) errors.sort((a, b) => itemIndex(a.instancePath) - itemIndex(b.instancePath));
      check.errors = errors;
      return false;
    };
    return check;
  };
}

export function registerIngestRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/api/ingest',
    {
      config: { auth: 'ingest', cors: true },
      bodyLimit: LIMITS.singleBodyBytes,
      validatorCompiler: withRules(app, (body, now) => checkEvent(body, '', now), false),
      schema: {
        tags,
        security,
        summary: 'Ingest one event. 202 once it is durably stored (it survives a crash of the service).',
        description:
          'Needs an `ingest` or `admin` key. Body ≤ 32 KiB. Counts one request against the standard ' +
          'rate limit. A `message_id` seen before in the workspace answers with the original `event_id`.',
        body: IngestEventSchema,
        response: { 202: IngestAckSchema },
      },
    },
    async (req, reply) => {
      const ack = await ingestEvent(deps.events, req.apiKey!, req.body);
      return reply.code(202).send(ack);
    },
  );

  app.post(
    '/tenant/ingest/batch',
    {
      config: { auth: 'ingest', cors: true, rateTier: 'batch' },
      bodyLimit: LIMITS.batchBodyBytes,
      validatorCompiler: withRules(app, checkBatch, true),
      // Before validation: an oversized batch is refused without validating 1000+ items, and the
      // batch tier is charged per event (contract §10) whether or not the events then validate.
      preValidation: async (req, reply) => {
        const body = req.body;
        if (Array.isArray(body) && body.length > LIMITS.batchEvents) {
          throw new AppError(
            'BATCH_TOO_LARGE',
            `a batch holds at most ${LIMITS.batchEvents} events; this one has ${body.length}`,
          );
        }
        const key = req.apiKey!;
        const points = Array.isArray(body) ? Math.max(1, body.length) : 1;
        const d = await deps.limits.consume(
          key.id,
          'batch',
          points,
          limitFor(key.workspaceSettings, 'batch'),
        );
        applyRateHeaders(reply, d);
        if (!d.allowed) throw rateLimited(d.resetSeconds);
      },
      schema: {
        tags,
        security,
        summary: 'Ingest up to 1000 events at once; all are stored, or none.',
        description:
          'Needs an `ingest` or `admin` key. Body ≤ 4 MiB. A batch of N events consumes N from the batch ' +
          'rate-limit tier. Any invalid item refuses the whole batch with a 400 whose `details` name each ' +
          'bad item (`/3/event_type`); more than 1000 events is 413 `BATCH_TOO_LARGE`. The 202 is sent ' +
          'once every event is durably stored; `event_ids` follow request order.',
        body: IngestBatchSchema,
        response: { 202: BatchAckSchema },
      },
    },
    async (req, reply) => {
      const ack = await ingestBatch(deps.events, req.apiKey!, req.body);
      return reply.code(202).send(ack);
    },
  );
}
