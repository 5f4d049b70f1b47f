import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { type Config, loadConfig } from '../src/config';
import { createKey } from '../src/modules/api-keys/api-keys.service';
import { createWorkspace } from '../src/modules/workspaces/workspaces.service';
import type { App } from '../src/platform/http/types';
import { createLogger } from '../src/platform/logger';
import { createRuntime, type Runtime } from '../src/runtime';

export { ENGINE } from './skips';

/**
 * Test harness: a whole service on its own database. With DATABASE_URL set it gets a fresh
 * PostgreSQL schema (dropped afterwards), otherwise an in-memory PGlite, so test files never see
 * each other's rows and CI can run the same suite on both engines.
 */
export interface TestWorkspace {
  id: string;
  adminKey: string;
  /** A key with exactly these scopes in this workspace. */
  key(scopes: string[], allowedDomains?: string[]): Promise<string>;
}

export interface TestService {
  rt: Runtime;
  app: App;
  config: Readonly<Config>;
  /** The bootstrapped `default` workspace. */
  ws: TestWorkspace;
  newWorkspace(name?: string): Promise<TestWorkspace>;
  call(method: string, url: string, opts?: CallOptions): Promise<Reply>;
  close(): Promise<void>;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as-is (already serialized), for malformed-body tests. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  headers: LightMyRequestResponse['headers'];
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
  body: any;
  text: string;
}

/** A fixed, readable uuid for test rows: `uuidOf(7)` is `00000000-0000-4000-8000-000000000007`. */
export const uuidOf = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

export function freshSchemaName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}

/** Environment for a test service (also used for child processes). */
export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: ':memory:',
    CDP_INITIAL_ADMIN_KEY: `cdp_sk_${randomBytes(32).toString('base64url')}`,
    ...extra,
  };
  if (process.env.DATABASE_URL) {
    env.DATABASE_URL = process.env.DATABASE_URL;
    env.DATABASE_SCHEMA ??= freshSchemaName();
  }
  // test/global-setup.ts: new embedded databases start migrated; '' in `extra` opts out.
  if (process.env.PGLITE_TEMPLATE && extra.PGLITE_TEMPLATE === undefined)
    env.PGLITE_TEMPLATE = process.env.PGLITE_TEMPLATE;
  return env;
}

export async function startTestService(extraEnv: Record<string, string> = {}): Promise<TestService> {
  const env = testEnv(extraEnv);
  const config = loadConfig(env);
  const rt = await createRuntime(config, createLogger(config.logLevel));
  const app = rt.app!;
  const db = rt.deps.db;

  const wrap = (id: string, adminKey: string): TestWorkspace => ({
    id,
    adminKey,
    async key(scopes, allowedDomains = []) {
      const k = await createKey(db, id, {
        name: `test ${scopes.join('+')}`,
        scopes,
        allowed_domains: allowedDomains,
      });
      return k.api_key;
    },
  });

  const call = async (method: string, url: string, opts: CallOptions = {}): Promise<Reply> => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key !== null) headers['x-api-key'] ??= opts.key ?? config.initialAdminKey!;
    const inject: InjectOptions = { method: method as InjectOptions['method'], url, headers };
    if (opts.rawBody !== undefined) {
      inject.payload = opts.rawBody;
      headers['content-type'] ??= 'application/json';
    } else if (opts.body !== undefined) {
      inject.payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject(inject);
    let body: unknown = null;
    try {
      body = res.body ? JSON.parse(res.body) : null;
    } catch {
      body = null;
    }
    return { status: res.statusCode, headers: res.headers, body, text: res.body };
  };

  return {
    rt,
    app,
    config,
    ws: wrap(rt.bootstrap!.workspaceId, rt.bootstrap!.apiKey.api_key),
    async newWorkspace(name = 'other') {
      const created = await createWorkspace(db, name);
      return wrap(created.workspace.id, created.api_key.api_key);
    },
    call,
    async close() {
      await rt.stop();
      if (config.databaseUrl && config.databaseSchema)
        await dropSchema(config.databaseUrl, config.databaseSchema);
    },
  };
}
