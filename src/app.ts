import type http from 'node:http';
import type https from 'node:https';
import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyHttpOptions, type FastifyHttpsOptions, LogController } from 'fastify';
import { registerCommandRoutes } from './commands.routes';
import { registerConsoleStatsRoutes } from './console-stats';
import { registerAccountRoutes } from './modules/accounts';
import { registerApiKeyRoutes } from './modules/api-keys';
import { registerAuditRoutes } from './modules/audit';
import { registerCommerceRoutes } from './modules/commerce/commerce.routes';
import {
  DEFAULT_CONSOLE_DIR,
  registerConsoleSite,
  registerSessionRoutes,
  registerStreamRoutes,
} from './modules/console';
import { registerSuppressionRoutes } from './modules/identity';
import { registerIngestRoutes } from './modules/ingest/ingest.routes';
import { registerIntelligenceRoutes } from './modules/intelligence';
import { registerDeadLetterRoutes } from './modules/processing/dead-letters.routes';
import { registerProfileRoutes } from './modules/profiles/profiles.routes';
import { registerSegmentRoutes } from './modules/segments/segments.routes';
import { registerSystemRoutes } from './modules/system/system.routes';
import { registerTrackingRoutes } from './modules/tracking';
import { registerWebhookRoutes } from './modules/webhooks';
import { registerSettingsRoutes } from './modules/workspaces';
import { registerWorkspaceRoutes } from './modules/workspaces/workspaces.routes';
import { stacklessError } from './platform/errors';
import { installAuditHooks } from './platform/http/audit';
import { createAuthHooks } from './platform/http/auth-hook';
import { createPreflightHandler } from './platform/http/cors';
import { ErrorEnvelopeSchema } from './platform/http/envelope';
import {
  clientErrorHandler,
  createNotFoundHandler,
  errorHandler,
  frameworkErrorHandler,
} from './platform/http/errors-handler';
import { slowClientLimits } from './platform/http/front-door';
import { registerJsonBodyParser } from './platform/http/json-body';
import { createRequestIdGenerator, echoRequestId } from './platform/http/request-id';
import { createRouteRegistry } from './platform/http/route-registry';
import { registerTextRule } from './platform/http/text-rule';
import { createHttpsRequiredHook, installDrainGuard } from './platform/http/transport';
import type { App, AppDeps } from './platform/http/types';
import { registerExportRoutes, registerIdentityRoutes, registerProfileWriteRoutes } from './workflows';

export const API_VERSION = '1.0.0';
/** Default body limit; ingest routes set their own (32 KiB single, 4 MiB batch). */
const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Two validators: request bodies are checked strictly (no type coercion, unknown fields refused,
 * every error reported), while query strings and path parameters, which arrive as text, are coerced
 * to the declared types.
 */
function makeValidators() {
  const base = { allErrors: true, strict: false, useDefaults: true, removeAdditional: false as const };
  const body = addFormats.default(new Ajv({ ...base, coerceTypes: false }));
  const text = addFormats.default(new Ajv({ ...base, coerceTypes: 'array' as const }));
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? body : text).compile(schema);
}

export interface BuildOptions {
  https?: { cert: Buffer; key: Buffer } | null;
  /**
   * A server already listening (`cdp start` binds its port first, platform/http/front-door.ts):
   * the app adopts it instead of creating its own, and its owner hands it the requests.
   */
  server?: http.Server | https.Server | null;
}

export async function buildApp(deps: AppDeps, opts: BuildOptions = {}): Promise<App> {
  const limits = slowClientLimits(deps.config.bodyTimeoutMs);
  const fastifyOpts: FastifyHttpOptions<http.Server> = {
    loggerInstance: deps.log,
    bodyLimit: DEFAULT_BODY_LIMIT,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    trustProxy: deps.config.trustProxy ?? false,
    forceCloseConnections: 'idle',
    requestTimeout: deps.config.bodyTimeoutMs,
    http: limits,
    // Draining answers 503 in the envelope (installDrainGuard); so do the framework's own errors.
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Per-request log lines cost ~10% throughput on the ingest path; errors are logged by errorHandler,
    // with this id, the method and the path.
    logController: new LogController({ disableRequestLogging: true }),
    // Unique across processes (req_ + a sortable random id); a trusted proxy's X-Request-Id is kept.
    genReqId: createRequestIdGenerator(deps.config.trustProxy),
    // errorHandler words the answer from err.validation; Fastify's default formatter would build a
    // message nobody reads and capture a stack for every refused request.
    schemaErrorFormatter: () => stacklessError('request validation failed'),
  };
  // With TLS the server is an https.Server; routes and hooks are the same, so one App type serves both.
  const adopted = opts.server;
  const server = adopted
    ? Fastify({ ...fastifyOpts, serverFactory: () => adopted as http.Server })
    : opts.https
      ? Fastify({
          ...(fastifyOpts as FastifyHttpsOptions<https.Server>),
          https: { ...opts.https, ...limits },
        })
      : Fastify(fastifyOpts);
  const app = server.withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  app.setValidatorCompiler(makeValidators());
  app.setErrorHandler(errorHandler);
  // First of all hooks, so that every answer (static files and 404s included) names its request.
  app.addHook('onRequest', echoRequestId);
  // Every route is recorded as it is registered (routeList: what the route test matrix runs).
  const routes = createRouteRegistry(app, createPreflightHandler(deps.origins));
  app.decorate('routeList', routes.routes);
  // The web console answers what no route does, outside the API's paths (modules/console/site.ts).
  const site = await registerConsoleSite(app, {
    dir: deps.config.consoleDir ?? DEFAULT_CONSOLE_DIR,
    log: deps.log,
  });
  app.setNotFoundHandler(site.notFound(createNotFoundHandler(routes)));
  app.decorateRequest('principal', null);
  app.addSchema(ErrorEnvelopeSchema);
  registerJsonBodyParser(app);
  registerTextRule(app);
  app.addHook('onRoute', routes.onRoute);

  installDrainGuard(app);
  // Behind a TLS-terminating proxy, plain HTTP reaching us directly is refused (health checks aside).
  if (deps.config.trustProxy && !opts.https) app.addHook('onRequest', createHttpsRequiredHook());
  // Writes the console's session cookie (reply.setCookie); the auth hook reads it itself, so no
  // parsing hook runs on requests that carry no session (platform/http/session-cookie.ts).
  await app.register(fastifyCookie, { hook: false });
  // Principals: from the headers before the body is read; a body `writeKey` after it is parsed.
  const auth = createAuthHooks(deps);
  app.addHook('onRequest', auth.onRequest);
  app.addHook('preValidation', auth.preValidation);
  // The audit trail: every request of a route that declares an action gets an entry, durable before
  // the answer leaves (platform/http/audit.ts).
  installAuditHooks(app, deps.audit);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Customer Data Platform API',
        version: API_VERSION,
        description:
          'Collect events, unify customer profiles, segment and predict. Authenticate with `X-API-Key`; ' +
          'the ingest endpoints also take the key as the HTTP Basic user name or as `writeKey` in the body. ' +
          'Errors use one envelope: `{status:"error", error_code, message, timestamp, details?}`.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          // The console's sign-in (POST /tenant/session); state changes also need X-CSRF-Token.
          consoleSession: { type: 'apiKey', in: 'cookie', name: 'cdp_session' },
          operatorToken: { type: 'http', scheme: 'bearer' },
          // Segment-style write keys; the third way, `writeKey` in the body, is a body field.
          basicAuth: {
            type: 'http',
            scheme: 'basic',
            description: 'Ingest routes only: the API key as the user name, an empty password.',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (json.$id as string) ?? `def-${i}` },
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });

  // The map of the service: every module, registered explicitly.
  registerSystemRoutes(app, deps);
  registerWorkspaceRoutes(app, deps);
  registerCommandRoutes(app, deps);
  registerSettingsRoutes(app, deps);
  registerApiKeyRoutes(app, deps);
  registerIngestRoutes(app, deps);
  registerTrackingRoutes(app, deps);
  registerCommerceRoutes(app, deps);
  registerAccountRoutes(app, deps);
  registerProfileRoutes(app, deps);
  registerProfileWriteRoutes(app, deps);
  registerIdentityRoutes(app, deps);
  registerSuppressionRoutes(app, deps);
  registerSegmentRoutes(app, deps);
  registerIntelligenceRoutes(app, deps);
  registerDeadLetterRoutes(app, deps);
  registerExportRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerSessionRoutes(app, deps);
  registerConsoleStatsRoutes(app, deps);
  registerStreamRoutes(app, deps);
  registerAuditRoutes(app, deps);

  return app;
}
