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
import type { CursorCodec } from '../cursor';
import type { Db } from '../db';
import type { OriginIndex } from './cors';
import type { PrincipalResolver } from './principal';
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

/**
 * What modules provide to each other through AppDeps (the key store, the event writer, …). Platform
 * knows none of them: the composition root declares them (src/module-services.ts).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging, from src/
export interface ModuleServices {}

/** Everything a module may use; built once in runtime.ts (or by the test harness) and passed down. */
export interface AppDeps extends ModuleServices {
  config: Readonly<Config>;
  db: Db;
  log: Logger;
  cursors: CursorCodec;
  /** The ways a request may authenticate, in the order they are read (see principal.ts). */
  principals: readonly PrincipalResolver[];
  limits: RateLimits;
  /** The origins CORS preflights are answered for (the keys' domains, in memory; see cors.ts). */
  origins: OriginIndex;
  redis: Redis | null;
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
    /** The methods a preflight of this OPTIONS route allows (the `cors` route's own). */
    corsMethods?: string;
    /**
     * The route reads JSON under any content type (the Segment-compatible tracking API: browsers send
     * it as text/plain), so a key in the body may come with any of them.
     */
    anyBodyType?: boolean;
    /** The key may be sent as the query field `writeKey` (RudderStack's settings document). */
    keyInUrl?: boolean;
  }
  interface FastifyInstance {
    /** Every route of the app (see route-registry.ts): what the route test matrix iterates. */
    routeList: readonly RouteInfo[];
  }
}
