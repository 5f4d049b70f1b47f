import { Type } from 'typebox';
import { PageQuery, pageRequest } from '../../platform/cursor';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import type { App, AppDeps } from '../../platform/http/types';
import * as processing from './processing.service';

const tags = ['dead letters'];
const security = [{ apiKey: [] }];

const DeadLetterSchema = Type.Object({
  id: Type.String({ description: 'dlq_…' }),
  reason: Type.String({ description: 'Why the worker could not apply the event.' }),
  attempts: Type.Integer(),
  failed_at: Type.String({ format: 'date-time' }),
  event: Type.Object({
    id: Type.String(),
    event_type: Type.String(),
    event_name: Type.String(),
    anonymous_id: Type.Union([Type.String(), Type.Null()]),
    identity: Type.Union([Type.String(), Type.Null()]),
    payload: Type.Object({}, { additionalProperties: true }),
    timestamp: Type.String({ format: 'date-time' }),
    received_at: Type.String({ format: 'date-time' }),
  }),
});

/**
 * Dead letters: events the worker set aside (docs/profiles.md). Reading them is a GET on /tenant like
 * any other (viewer), since a viewer can read the same events on profile timelines; putting one back
 * in the stream is a write (editor).
 */
export function registerDeadLetterRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/tenant/dead-letters',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Events the worker could not apply, oldest first, with the reason.',
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: PageEnvelope(DeadLetterSchema) },
      },
    },
    async (req) => {
      const scope = { collection: 'dead-letters', workspaceId: req.apiKey!.workspaceId, parent: null };
      const page = pageRequest(deps.cursors, scope, req.query);
      return {
        status: 'success' as const,
        ...(await processing.listDeadLetters(deps.db, deps.cursors, req.apiKey!.workspaceId, page)),
      };
    },
  );

  app.post(
    '/tenant/dead-letters/:id/retry',
    {
      config: { auth: 'write' },
      schema: {
        tags,
        security,
        summary: 'Put a dead-lettered event back in the processing stream (after fixing its cause).',
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        response: {
          200: Envelope(
            Type.Object({ id: Type.String(), event_id: Type.String(), requeued: Type.Literal(true) }),
          ),
        },
      },
    },
    async (req) => ok(await processing.requeueDeadLetter(deps.db, req.apiKey!.workspaceId, req.params.id)),
  );
}
