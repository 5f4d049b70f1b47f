import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { yielderFor } from '../../platform/cooperate';
import { AppError, stacklessError } from '../../platform/errors';
import { INGEST_EXEMPTION } from '../../platform/http/audit';
import { applyRateHeaders, rateLimited } from '../../platform/http/auth-hook';
import { principalOf } from '../../platform/http/principal';
import { limitFor } from '../../platform/http/rate-limit';
import type { App, AppDeps } from '../../platform/http/types';
import { checkEvent, type RuleError } from './ingest.rules';
import {
  BatchAckSchema,
  IngestAckSchema,
  IngestBatchSchema,
  IngestEventSchema,
  LIMITS,
} from './ingest.schemas';
import { ingestBatch, ingestEvent } from './ingest.service';

const tags = ['ingestion'];

type Check = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };

/**
 * The app's body validator plus the ingest rules, reported together: a client sees every problem
 * of the event in one 400, whichever check found it.
 */
function withRules(
  app: App,
  rules: (body: unknown, now: number) => RuleError[],
): FastifySchemaCompiler<unknown> {
  return (route) => {
    const schemaCheck = app.validatorCompiler!(route) as Check;
    if (route.httpPart !== 'body') return schemaCheck;
    const check: Check = (data) => {
      const ok = schemaCheck(data);
      const extra = rules(data, Date.now()) as unknown as FastifySchemaValidationError[];
      if (ok && extra.length === 0) return true;
      check.errors = mergeErrors(ok ? [] : (schemaCheck.errors ?? []), extra);
      return false;
    };
    return check;
  };
}

/** One message per field: a value the schema already refused is not reported again by the rules. */
function mergeErrors(
  schemaErrors: readonly FastifySchemaValidationError[],
  ruleErrors: readonly FastifySchemaValidationError[],
): FastifySchemaValidationError[] {
  const refused = new Set(schemaErrors.map((e) => e.instancePath));
  return [...schemaErrors, ...ruleErrors.filter((e) => !refused.has(e.instancePath))];
}

/**
 * The batch route's body validator checks only the array itself (type, item count): its items are
 * checked by checkBatchItems, in slices. The OpenAPI document still shows the whole schema.
 */
function arrayOnly(app: App): FastifySchemaCompiler<unknown> {
  return (route) => {
    if (route.httpPart !== 'body') return app.validatorCompiler!(route);
    const { items: _items, ...array } = route.schema as Record<string, unknown>;
    return app.validatorCompiler!({ ...route, schema: array });
  };
}

/**
 * Every problem of every batch item, as the validator of the whole array plus checkBatch would
 * report them (paths `/3/…`, item by item, schema errors first), but item by item with
 * `yieldNow` between items: one 4 MiB batch took ≈ 65 ms of validation in one go, during which
 * nothing else was answered.
 */
export async function checkBatchItems(
  items: readonly unknown[],
  checkItem: Check,
  now: number,
  yieldNow: (() => Promise<void>) & { due?: () => boolean },
): Promise<FastifySchemaValidationError[]> {
  const errors: FastifySchemaValidationError[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const at = `/${i}`;
    const schemaErrors = checkItem(item)
      ? []
      : (checkItem.errors ?? []).map((e) => ({ ...e, instancePath: `${at}${e.instancePath}` }));
    const ruleErrors = checkEvent(item, at, now) as unknown as FastifySchemaValidationError[];
    if (schemaErrors.length > 0 || ruleErrors.length > 0)
      errors.push(...mergeErrors(schemaErrors, ruleErrors));
    if (yieldNow.due?.() !== false) await yieldNow();
  }
  return errors;
}

/** The error Fastify raises when a body fails its schema (app.ts: schemaErrorFormatter). */
const bodyValidationError = (errors: FastifySchemaValidationError[]) =>
  Object.assign(stacklessError('request validation failed'), {
    validation: errors,
    validationContext: 'body',
    statusCode: 400,
  });

export function registerIngestRoutes(app: App, deps: AppDeps): void {
  const checkItem = app.validatorCompiler!({
    schema: IngestBatchSchema.items,
    method: 'POST',
    url: '/tenant/ingest/batch',
    httpPart: 'body',
  }) as Check;
  app.post(
    '/api/ingest',
    {
      config: { auth: 'ingest', cors: true, audit: { exempt: INGEST_EXEMPTION } },
      bodyLimit: LIMITS.singleBodyBytes,
      validatorCompiler: withRules(app, (body, now) => checkEvent(body, '', now)),
      schema: {
        tags,
        summary: 'Ingest one event. 202 once it is durably stored (it survives a crash of the service).',
        description:
          'Needs an `ingest` or `admin` key. Body ≤ 32 KiB. Counts one request against the standard ' +
          'rate limit. A `message_id` seen before in the workspace answers with the original `event_id`.',
        body: IngestEventSchema,
        response: { 202: IngestAckSchema },
      },
    },
    async (req, reply) => {
      const ack = await ingestEvent(deps.events, principalOf(req), req.body);
      return reply.code(202).send(ack);
    },
  );

  app.post(
    '/tenant/ingest/batch',
    {
      config: { auth: 'ingest', cors: true, rateTier: 'batch', audit: { exempt: INGEST_EXEMPTION } },
      bodyLimit: LIMITS.batchBodyBytes,
      validatorCompiler: arrayOnly(app),
      // Before validation: an oversized batch is refused without validating 1000+ items, and the
      // batch tier is charged per event (docs/api.md "Rate limits") whether or not the events then validate.
      // Then the items are validated here, in slices (checkBatchItems); the route's validator only
      // checks the array.
      preValidation: async (req, reply) => {
        const body = req.body;
        if (Array.isArray(body) && body.length > LIMITS.batchEvents) {
          throw new AppError(
            'BATCH_TOO_LARGE',
            `a batch holds at most ${LIMITS.batchEvents} events; this one has ${body.length}`,
          );
        }
        const key = principalOf(req);
        const points = Array.isArray(body) ? Math.max(1, body.length) : 1;
        const d = await deps.limits.consume(
          key.id,
          'batch',
          points,
          limitFor(key.workspaceSettings, 'batch'),
        );
        applyRateHeaders(reply, d);
        if (!d.allowed) throw rateLimited(d.resetSeconds);
        if (Array.isArray(body)) {
          const errors = await checkBatchItems(body, checkItem, Date.now(), yielderFor(req));
          if (errors.length > 0) throw bodyValidationError(errors);
        }
      },
      schema: {
        tags,
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
      const ack = await ingestBatch(deps.events, principalOf(req), req.body);
      return reply.code(202).send(ack);
    },
  );
}
