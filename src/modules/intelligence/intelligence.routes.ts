import { Type } from 'typebox';
import { Envelope, ok } from '../../platform/http/envelope';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { fitNow, getChurn, getClv, listModels } from './intelligence.read';
import {
  ChurnSchema,
  ClvSchema,
  FitBody,
  FitResultSchema,
  ModelFitSchema,
  ProfileIdParams,
} from './intelligence.schemas';

const tags = ['intelligence'];
const security = [{ apiKey: [] }];

/** Contract §8: CLV and churn of a profile (read scope), the current fits, and a fit on demand (admin). */
export function registerIntelligenceRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/intelligence/clv/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Predicted customer lifetime value of a profile, with the model it came from.',
        params: ProfileIdParams,
        response: { 200: Envelope(ClvSchema) },
      },
    },
    async (req) => ok(await getClv(deps.db, deps.settings, workspaceOf(req), req.params.id)),
  );

  app.get(
    '/intelligence/churn/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Churn risk of a profile (1 − P(alive)) against the workspace threshold.',
        params: ProfileIdParams,
        response: { 200: Envelope(ChurnSchema) },
      },
    },
    async (req) => ok(await getChurn(deps.db, deps.settings, workspaceOf(req), req.params.id)),
  );

  app.get(
    '/intelligence/models',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'The workspace’s current fit: purchase model, spend model and RFM cut points (empty before the first).',
        response: { 200: Envelope(Type.Array(ModelFitSchema)) },
      },
    },
    async (req) => ok(await listModels(deps.db, workspaceOf(req))),
  );

  app.post(
    '/intelligence/models/fit',
    {
      config: { auth: 'admin' },
      schema: {
        tags,
        security,
        summary:
          'Fit the workspace’s models now on completed orders at or before `as_of` (default now) and rescore ' +
          'every profile as of it. Fits also run by themselves as orders arrive and every 6 hours.',
        body: FitBody,
        response: { 200: Envelope(FitResultSchema) },
      },
    },
    async (req) => ok(await fitNow(deps.db, deps.settings, workspaceOf(req), req.body ?? {})),
  );
}
