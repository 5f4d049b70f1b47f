/**
 * The console's server side (docs/console.md). Tables: console_sessions. Sign-in sessions (the
 * cookie principal's store), the live event stream, and the built web app served at `/`.
 */

export { createEventStreamHub, type EventStreamHub } from './event-stream';
export { consoleHousekeeping } from './housekeeping';
export {
  createSessionStore,
  pruneSessions,
  SESSION_LIMITS,
  type SessionStore,
  type SessionView,
} from './sessions';
export { registerSessionRoutes, SessionSchema } from './sessions.routes';
export { API_PREFIXES, type ConsoleSite, DEFAULT_CONSOLE_DIR, isApiPath, registerConsoleSite } from './site';
export { registerStreamRoutes } from './stream.routes';
export type { StreamedEvent } from './stream-connection';
export { STREAM_LIMITS } from './stream-limits';
