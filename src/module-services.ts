import type { KeyResolver } from './modules/api-keys';
import type { SessionStore } from './modules/console';
import type { EventWriter } from './modules/ingest/ingest.service';
import type { SettingsStore } from './modules/workspaces';
import type { AuditSink } from './platform/http/audit';
import type { PersonalDataRegistry } from './platform/personal-data';

/**
 * The services modules hand each other through AppDeps, declared here, at the composition root, so
 * that platform/ needs to import nothing from modules/ (runtime.ts builds them).
 */
declare module './platform/http/types' {
  interface ModuleServices {
    /** The API-key store: revocation (api-keys routes) and cache statistics (system routes). */
    keys: KeyResolver;
    /** The durable, group-committed event appender (modules/ingest). */
    events: EventWriter;
    /** The one accessor of workspace settings, cached per process, changes propagated (modules/workspaces). */
    settings: SettingsStore;
    /** Console sign-in sessions (modules/console): the cookie principal's store. */
    sessions: SessionStore;
    /** Where personal data lives (src/personal-data.ts): what erasure, export and retention run. */
    personalData: PersonalDataRegistry;
    /** Where audited requests write their entry (modules/audit; platform/http/audit.ts says when). */
    audit: AuditSink;
  }
}
