import { Type } from 'typebox';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pagedQuery, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { EventViewSchema } from '../ingest';
import * as processing from './dead-letters.service';

const tags = ['dead letters'];
const security = [{ apiKey: [] }];

const DeadLetterSchema = Type.Object({
  id: Type.String({ description: 'dlq_…' }),
  reason: Type.String({ description: 'Why the worker could not apply the event.' }),
  attempts: Type.Integer(),
  failed_at: Type.String({ format: 'date-time' }),
  event: EventViewSchema,
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
        querystring: pagedQuery(),
        response: { 200: PageEnvelope(DeadLetterSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'dead-letters');
      return paged(await processing.listDeadLetters(deps.db, deps.cursors, workspaceOf(req), page));
    },
  );

  app.post(
    '/tenant/dead-letters/:id/retry',
    {
      config: { auth: 'write', audit: { action: 'dead_letter.retry', target: 'dead_letter' } },
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
    async (req) => ok(await processing.requeueDeadLetter(deps.db, workspaceOf(req), req.params.id)),
  );
}
