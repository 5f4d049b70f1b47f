import { Type } from 'typebox';
import { notFound } from '../../platform/errors';
import { Envelope, ok } from '../../platform/http/envelope';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { MAX_IDENTIFIER_LENGTH } from './identifiers';
import { liftSuppression } from './identity.service';

const SuppressionParams = Type.Object({
  identifier: Type.String({
    minLength: 1,
    maxLength: MAX_IDENTIFIER_LENGTH,
    description:
      'The identifier as an event would send it (`identity` or `anonymous_id`), URL-encoded: it is normalized the same way.',
  }),
});

const LiftedSchema = Type.Object({ identifier: Type.String(), lifted: Type.Literal(true) });

export function registerSuppressionRoutes(app: App, deps: AppDeps): void {
  app.delete(
    '/tenant/suppressions/:identifier',
    {
      // The identifier itself stays out of the trail: it is the erased person's.
      config: { auth: 'admin', audit: { action: 'suppression.lift', target: 'suppression', id: 'none' } },
      schema: {
        tags: ['profiles'],
        security: [{ apiKey: [] }],
        summary:
          'Lift a suppression: the identifier, blocked by an erasure with `suppress=true`, may create a profile ' +
          'again (events that arrive from now on). 404 when it is not suppressed.',
        params: SuppressionParams,
        response: { 200: Envelope(LiftedSchema) },
      },
    },
    async (req) => {
      if (!(await liftSuppression(deps.db, workspaceOf(req), req.params.identifier))) {
        throw notFound('suppression');
      }
      return ok({ identifier: req.params.identifier, lifted: true as const });
    },
  );
}
