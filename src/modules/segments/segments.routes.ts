import { withinAnalyticsShare } from '../../platform/http/analytics-share';
import { Envelope, ok, PageEnvelope } from '../../platform/http/envelope';
import { paged, pageOf } from '../../platform/http/paging';
import { workspaceOf } from '../../platform/http/principal';
import type { App, AppDeps } from '../../platform/http/types';
import { ProfileSchema } from '../profiles/profiles.schemas';
import * as reads from './segments.read';
import {
  CalculateBody,
  CalculateSchema,
  ChangeSchema,
  CreateSegmentBody,
  DeletedSegmentSchema,
  ListSegmentsQuery,
  PageOnlyQuery,
  PatchSegmentBody,
  SegmentIdParams,
  SegmentSchema,
} from './segments.schemas';
import * as segments from './segments.service';

const tags = ['segments'];
const security = [{ apiKey: [] }];

export function registerSegmentRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/tenant/segments/calculate',
    {
      config: {
        auth: 'write',
        audit: {
          exempt: 'a query sent as POST for its body: it counts and lists profiles and changes nothing',
        },
      },
      schema: {
        tags,
        security,
        summary:
          'Evaluate a segment query now without saving it: how many live profiles it selects, and a page ' +
          'of them (oldest first). The cursor only pages the same query. At most 10 s of work (422 ' +
          'BUDGET_EXCEEDED past it: save the segment instead) and `analytics_concurrency` calculations ' +
          'of a workspace at once (429 beyond).',
        body: CalculateBody,
        response: { 200: Envelope(CalculateSchema) },
      },
    },
    async (req) => {
      const ws = workspaceOf(req);
      const { analytics_concurrency: limit } = await deps.settings.read(deps.db, ws);
      return ok(
        await withinAnalyticsShare(ws, limit, () =>
          reads.calculate(deps.db.lane('analytics'), deps.cursors, ws, req.body),
        ),
      );
    },
  );

  app.post(
    '/tenant/segments',
    {
      config: { auth: 'write', audit: { action: 'segment.create', target: 'segment' } },
      schema: {
        tags,
        security,
        summary:
          'Save a segment. Its membership is computed in the background (`membership_status`) and kept ' +
          'current as events arrive; entries and exits are recorded.',
        body: CreateSegmentBody,
        response: { 200: Envelope(SegmentSchema) },
      },
    },
    async (req) => ok(await segments.createSegment(deps.db, workspaceOf(req), req.body)),
  );

  app.get(
    '/tenant/segments',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'List saved segments (oldest first) with their member counts; `profile_id` lists the segments ' +
          'that profile is a member of now.',
        querystring: ListSegmentsQuery,
        response: { 200: PageEnvelope(SegmentSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'segments');
      const filter = { profile_id: req.query.profile_id };
      return paged(await reads.listSegments(deps.db, deps.cursors, workspaceOf(req), page, filter));
    },
  );

  app.get(
    '/tenant/segments/:id',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Read one saved segment.',
        params: SegmentIdParams,
        response: { 200: Envelope(SegmentSchema) },
      },
    },
    async (req) => ok(await segments.getSegment(deps.db, workspaceOf(req), req.params.id)),
  );

  app.get(
    '/tenant/segments/:id/members',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary: 'Page the segment’s current members, in the order they entered.',
        params: SegmentIdParams,
        querystring: PageOnlyQuery,
        response: { 200: PageEnvelope(ProfileSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'segment-members', req.params.id);
      return paged(await reads.listMembers(deps.db, deps.cursors, workspaceOf(req), req.params.id, page));
    },
  );

  app.get(
    '/tenant/segments/:id/changes',
    {
      config: { auth: 'read' },
      schema: {
        tags,
        security,
        summary:
          'Page the segment’s membership changes (`entered` / `exited`), oldest first: the order they ' +
          'were decided in, so a client can follow the log with its cursor.',
        params: SegmentIdParams,
        querystring: PageOnlyQuery,
        response: { 200: PageEnvelope(ChangeSchema) },
      },
    },
    async (req) => {
      const page = pageOf(req, deps.cursors, 'segment-changes', req.params.id);
      return paged(await reads.listChanges(deps.db, deps.cursors, workspaceOf(req), req.params.id, page));
    },
  );

  app.patch(
    '/tenant/segments/:id',
    {
      config: { auth: 'write', audit: { action: 'segment.update', target: 'segment' } },
      schema: {
        tags,
        security,
        summary:
          'Change a segment’s name, description or query. A new query re-evaluates its membership (and ' +
          'that of segments referring to it).',
        params: SegmentIdParams,
        body: PatchSegmentBody,
        response: { 200: Envelope(SegmentSchema) },
      },
    },
    async (req) => ok(await segments.updateSegment(deps.db, workspaceOf(req), req.params.id, req.body)),
  );

  app.delete(
    '/tenant/segments/:id',
    {
      config: { auth: 'write', audit: { action: 'segment.delete', target: 'segment' } },
      schema: {
        tags,
        security,
        summary:
          'Delete a segment with its membership and change log. Refused (409) while another segment ' +
          'refers to it.',
        params: SegmentIdParams,
        response: { 200: Envelope(DeletedSegmentSchema) },
      },
    },
    async (req) => {
      await segments.deleteSegment(deps.db, workspaceOf(req), req.params.id);
      return ok({ id: req.params.id, deleted: true as const });
    },
  );
}
