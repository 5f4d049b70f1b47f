import { accountsPersonalData } from './modules/accounts';
import { auditPersonalData } from './modules/audit';
import { commercePersonalData } from './modules/commerce';
import { identityPersonalData } from './modules/identity';
import { ingestPersonalData } from './modules/ingest';
import { intelligencePersonalData } from './modules/intelligence';
import { outboxPersonalData } from './modules/outbox';
import { processingPersonalData } from './modules/processing';
import { profilesPersonalData } from './modules/profiles';
import { segmentsPersonalData } from './modules/segments';
import { webhooksPersonalData } from './modules/webhooks';
import type { PersonalDataRegistry } from './platform/personal-data';

/**
 * Where personal data lives: every module's tables of it, and every table that holds none, with the
 * reason (src/platform/personal-data.ts says what an owner registers). The erasure workflow, the
 * access export and the retention sweep run this list, so whatever is registered here is forgotten,
 * exported and expired by all of them; `test/personal-data.schema.test.ts` compares it with the
 * tables of the database and fails for one that is missing. docs/profiles.md ("What is kept about a
 * person") is this table in words.
 *
 * It lives at the composition root because its owners span every layer (the processing module's
 * backlog sits above the workflows that erase).
 */
export const PERSONAL_DATA: PersonalDataRegistry = {
  owners: [
    // Rows found by identifier first, while the identifiers are still known to every owner.
    processingPersonalData,
    ingestPersonalData,
    outboxPersonalData,
    webhooksPersonalData,
    segmentsPersonalData,
    accountsPersonalData,
    intelligencePersonalData,
    commercePersonalData,
    identityPersonalData,
    auditPersonalData,
    // Last: the rows everything else refers to.
    profilesPersonalData,
  ],
  free: [
    { table: 'workspaces', module: 'workspaces', reason: 'workspace names and settings chosen by operators' },
    {
      table: 'system_settings',
      module: 'workspaces',
      reason: 'service-wide settings (the console cookie secret, …), no one’s data',
    },
    { table: 'api_keys', module: 'api-keys', reason: 'key names, scopes and hashes chosen by operators' },
    {
      table: 'event_minutes',
      module: 'ingest',
      reason: 'counts of events per workspace and minute, no event and no identifier',
    },
    {
      table: 'profile_erasures',
      module: 'profiles',
      reason: 'the erasure log keeps ids and counts only, never what was erased (docs/profiles.md)',
    },
    { table: 'products', module: 'commerce', reason: 'the shop’s catalogue' },
    {
      table: 'accounts',
      module: 'accounts',
      reason: 'traits of a company or team that group calls name; the people in it are in account_members',
    },
    {
      table: 'segments',
      module: 'segments',
      reason:
        'segment definitions written by operators (a condition may name a value, not a record about a person)',
    },
    {
      table: 'segment_definition_versions',
      module: 'segments',
      reason: 'a version number per workspace',
    },
    { table: 'model_fits', module: 'intelligence', reason: 'model parameters fitted over a whole workspace' },
    {
      table: 'model_backtests',
      module: 'intelligence',
      reason: 'a back-test’s evaluation: workspace-wide figures',
    },
    { table: 'intelligence_state', module: 'intelligence', reason: 'counters per workspace' },
    {
      table: 'webhook_subscriptions',
      module: 'webhooks',
      reason: 'receivers’ URLs, secrets and filters chosen by operators',
    },
    {
      table: 'webhook_cursors',
      module: 'webhooks',
      reason: 'the fan-out’s position in the outbox per workspace',
    },
    {
      table: 'webhook_attempts',
      module: 'webhooks',
      reason:
        'status codes, durations and transport errors of each attempt; the body stays with its delivery',
    },
    {
      table: 'console_sessions',
      module: 'console',
      reason: 'operators’ sign-in sessions: which API key signed in, never a customer',
    },
    {
      table: 'jobs',
      module: 'platform/jobs',
      reason: 'background work: queue, workspace and ids (a delivery id, a fit id), never a person’s data',
    },
    { table: 'job_schedules', module: 'platform/jobs', reason: 'the names and times of scheduled work' },
    { table: 'schema_migrations', module: 'platform/db', reason: 'the applied migrations' },
  ],
};
