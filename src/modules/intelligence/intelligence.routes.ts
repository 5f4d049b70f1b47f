import { Type } from 'typebox';
import { withinAnalyticsShare } from '../../platform/http/analytics-share';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pagedQuery, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { BacktestItemSchema, FitBody, FitResultSchema, FitSchema, ModelFitSchema } from './fit.schemas';
import { fitNow, getChurn, getClv, getFit, listModels } from './intelligence.read';
import { ChurnSchema, ClvSchema, FitIdParams, ProfileIdParams, ScoreQuery } from './intelligence.schemas';
import { getSummary, listBacktests } from './intelligence.summary';
import { SummarySchema } from './summary.schemas';

const tags = ['intelligence'];
const security = [{ apiKey: [] }];

/**
 * docs/intelligence.md: CLV and churn of a profile (read scope; under a back-test with `?fit=`), the current
 * fit and any fit by id, and a fit on demand (admin): live as of now, or a back-test.
 */
export function registerIntelligenceRoutes(app: App, deps: AppDeps): void {
  app.get(
    '/intelligence/clv/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'Predicted customer lifetime value of a profile, with the model it came from (with `fit`, under that back-test).',
        params: ProfileIdParams,
        querystring: ScoreQuery,
        response: { 200: Envelope(ClvSchema) },
      },
    },
    async (req) => ok(await getClv(deps.db, deps.settings, workspaceOf(req), req.params.id, req.query.fit)),
  );

  app.get(
    '/intelligence/churn/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'Churn risk of a profile (1 − P(alive)) against the workspace threshold (with `fit`, under that back-test).',
        params: ProfileIdParams,
        querystring: ScoreQuery,
        response: { 200: Envelope(ChurnSchema) },
      },
    },
    async (req) => ok(await getChurn(deps.db, deps.settings, workspaceOf(req), req.params.id, req.query.fit)),
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

  app.get(
    '/intelligence/summary',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'The workspace at a glance: scored live profiles per RFM (recency × frequency) cell and per label, ' +
          'the predicted-CLV and churn-risk histograms, and the current fit. Two passes over the workspace’s ' +
          'profiles, under the calculation budget (422 BUDGET_EXCEEDED past it) and `analytics_concurrency`.',
        response: { 200: Envelope(SummarySchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const { analytics_concurrency: limit } = await deps.settings.read(deps.db, ws);
      // The analytics lane, as a calculation: its own pool on PostgreSQL, behind requests on PGlite.
      return ok(await withinAnalyticsShare(ws, limit, () => getSummary(deps.db.lane('analytics'), ws)));
    },
  );

  app.get(
    '/intelligence/backtests',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'The workspace’s back-tests (its newest 10 are kept), newest first, with their holdout figures; ' +
          'the whole evaluation is GET /intelligence/models/{fit_id}.',
        querystring: pagedQuery(),
        response: { 200: PageEnvelope(BacktestItemSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'intelligence-backtests');
      return paged(await listBacktests(deps.db, deps.cursors, workspaceOf(req), page));
    },
  );

  app.get(
    '/intelligence/models/:fit_id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'One fit by id, live or back-test: its purchase and spend models with standard errors, and a ' +
          'back-test’s holdout evaluation.',
        params: FitIdParams,
        response: { 200: Envelope(FitSchema) },
      },
    },
    async (req) => ok(await getFit(deps.db, workspaceOf(req), req.params.fit_id)),
  );

  app.post(
    '/intelligence/models/fit',
    {
      config: { auth: 'admin', audit: { action: 'model.fit', target: 'model_fit', id: 'answer.fit_id' } },
      // Every field is optional: a bare POST is the live fit with the default model.
      preValidation: async (req) => {
        req.body ??= {};
      },
      schema: {
        tags,
        security,
        summary:
          'Fit the workspace’s models now and rescore every profile (the live fit; fits also run by themselves ' +
          'as orders arrive and every 6 hours), or, with an `as_of` in the past, run a back-test: fitted on the ' +
          'orders up to `as_of`, scored under its own fit id, evaluated on the orders after it, and invisible ' +
          'to production (no live score, no webhook).',
        body: FitBody,
        response: { 200: Envelope(FitResultSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const { analytics_concurrency: limit } = await deps.settings.read(deps.db, ws);
      // The analytics lane: a pool of its own on PostgreSQL, behind requests on PGlite.
      const db = deps.db.lane('analytics');
      return ok(await withinAnalyticsShare(ws, limit, () => fitNow(db, deps.settings, ws, req.body ?? {})));
    },
  );
}
