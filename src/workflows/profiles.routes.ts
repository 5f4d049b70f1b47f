import { Type } from 'typebox';
import {
  ConsentAnswerSchema,
  DeleteProfileQuery,
  ErasureSchema,
  ProfileIdParams,
  ProfileSchema,
  PutConsentBody,
  UpsertProfileBody,
} from '../modules/profiles/profiles.schemas';
import { consentDefaultFrom } from '../modules/webhooks';
import { AppError } from '../platform/errors';
import { analyticsSlots } from '../platform/http/analytics-share';
import { Envelope, ok } from '../platform/http/envelope';
import { principalOf, workspaceOf } from '../platform/http/principal';
import type { App, AppDeps } from '../platform/http/types';
import { ACCESS_EXPORT_FORMAT, streamAccessExport } from './access-export';
import { setConsent } from './consent';
import { dataSubject } from './data-subject';
import { eraseProfile } from './erasure';
import { upsertProfile } from './profile-write';

/**
 * The profile routes whose work spans modules: an API write (identifiers, traits, segment work),
 * consent choices (profiles, webhooks), an erasure and an access export (every owner's rows). The other reads are the profiles module's own.
 */

const tags = ['profiles'];
const security = [{ apiKey: [] }];

export function registerProfileWriteRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/tenant/profiles',
    {
      config: { auth: 'write', audit: { action: 'profile.upsert', target: 'profile' } },
      schema: {
        tags,
        security,
        summary:
          'Create or update a profile: with `id` update it (404 if unknown); else match by `identity`, then ' +
          '`email`; else create. Traits merge by the trait rules; lineage names the API key.',
        body: UpsertProfileBody,
        response: { 200: Envelope(ProfileSchema) },
      },
    },
    async (req) => ok(await upsertProfile(deps.db, workspaceOf(req), principalOf(req).id, req.body)),
  );

  app.put(
    '/tenant/profiles/:id/consent',
    {
      config: { auth: 'write', audit: { action: 'profile.consent', target: 'profile' } },
      schema: {
        tags,
        security,
        summary:
          'Record the profile’s consent choices (category → granted), as of now; categories not named keep ' +
          'theirs. A denial cancels the queued deliveries (and retries) of facts about the profile to every ' +
          'webhook subscription that needs the category, and answers once no attempt is under way: from then ' +
          'on nothing about the profile reaches them (docs/profiles.md, "Consent").',
        params: ProfileIdParams,
        body: PutConsentBody,
        response: { 200: Envelope(ConsentAnswerSchema) },
      },
    },
    async (req) =>
      ok(
        await setConsent(
          deps.db,
          consentDefaultFrom(deps.settings),
          workspaceOf(req),
          req.params.id,
          req.body.categories,
          principalOf(req).id,
        ),
      ),
  );

  app.delete(
    '/tenant/profiles/:id',
    {
      config: { auth: 'write', audit: { action: 'profile.erase', target: 'profile' } },
      schema: {
        tags,
        security,
        summary:
          'Erase a profile (and the profiles merged into it): events, identifiers, lineage; orders lose the ' +
          'link. `suppress=true` also blocks its identifiers from creating a profile again.',
        params: ProfileIdParams,
        querystring: DeleteProfileQuery,
        response: { 200: Envelope(ErasureSchema) },
      },
    },
    async (req) =>
      ok(
        await eraseProfile(deps.db, deps.log, deps.personalData, workspaceOf(req), req.params.id, {
          suppress: req.query.suppress ?? false,
          apiKeyId: principalOf(req).id,
        }),
      ),
  );

  app.get(
    '/tenant/profiles/:id/export',
    {
      config: { auth: 'admin', audit: { action: 'profile.export', target: 'profile' } },
      schema: {
        tags,
        security,
        summary:
          'Everything held about one person (GDPR art. 15 and 20), as one JSON document streamed as it is read: ' +
          'profile, identifiers, lineage, events with payloads, events not applied yet, orders, segment memberships ' +
          'and changes, accounts, scores, facts and the webhook deliveries that carried their data (docs/profiles.md).',
        params: ProfileIdParams,
        response: {
          200: Type.Unsafe({
            type: 'object',
            description: `\`{export: {format: "${ACCESS_EXPORT_FORMAT}", workspace_id, profile_id, generated_at}, profile, <section>: [...], …}\``,
          }),
        },
      },
    },
    async (req, reply) => {
      const ws = workspaceOf(req);
      const subject = await dataSubject(deps.db, ws, req.params.id, { lock: false });
      // An export walks a person's whole history: it counts against the workspace's share of
      // expensive operations until the last byte is written (or the client goes away).
      const { analytics_concurrency: limit } = await deps.settings.read(deps.db, ws);
      const release = analyticsSlots.tryAcquire(ws, limit);
      if (!release) {
        throw new AppError(
          'RATE_LIMITED',
          `at most ${limit} expensive operations of this workspace run at once (setting analytics_concurrency)`,
          { headers: { 'retry-after': '1' } },
        );
      }
      const stream = streamAccessExport(deps.db, deps.personalData, subject);
      stream.once('close', release);
      return reply
        .type('application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="profile-${subject.profileIds[0]}.json"`)
        .send(stream);
    },
  );
}
