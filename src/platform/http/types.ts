import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import type { KeyResolver, ResolvedKey } from '../../modules/api-keys/api-keys.service';
import type { EventWriter } from '../../modules/ingest/ingest.service';
import type { CursorCodec } from '../cursor';
import type { Db } from '../db';
import type { RateLimits, Tier } from './rate-limit';
import type { RouteInfo } from './route-registry';
import type { RouteAuth } from './scopes';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Everything a module may use; built once in main.ts (or by the test harness) and passed down. */
export interface AppDeps {
  config: Readonly<Config>;
  db: Db;
  log: Logger;
  cursors: CursorCodec;
  keys: KeyResolver;
  limits: RateLimits;
  redis: Redis | null;
  /** The durable, group-committed event appender (modules/ingest). */
  events: EventWriter;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (see scopes.ts); required on every route. */
    auth?: RouteAuth;
    /** Which rate-limit tier the route counts against; `batch` routes consume per event themselves. */
    rateTier?: Tier | 'none';
    /** Answers CORS for browser origins allowed by the key (ingest endpoints). */
    cors?: boolean;
    /** Set on the OPTIONS routes the route registry adds beside `cors` routes. */
    preflight?: boolean;
  }
  interface FastifyInstance {
    /** Every route of the app (see route-registry.ts): what the route test matrix iterates. */
    routeList: readonly RouteInfo[];
  }
  interface FastifyRequest {
    /** The authenticated API key, set by the auth hook on key-protected routes. */
    apiKey: ResolvedKey | null;
  }
}
