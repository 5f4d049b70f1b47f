import { parseArgs } from 'node:util';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { type Config, ConfigError, loadConfig } from './config';
import { CreateApiKeyBody } from './modules/api-keys/api-keys.schemas';
import { CreateWorkspaceBody } from './modules/workspaces/workspaces.schemas';
import type { Db } from './platform/db';
import { SCOPES } from './platform/http/scopes';
import { isUuid } from './platform/ids';

// The service (serve.ts), the database drivers and the modules are imported when a command needs them, so
// `--help` and argument mistakes answer without loading (and transpiling) the whole service.

const USAGE = `usage: cdp <command>

  start                         run the service (ROLE=api|worker|all, default all)
  migrate                       apply database migrations and exit; prints {"applied":[versions]}
  workspace create NAME         create a workspace; prints JSON with its admin key
  key create --workspace ID --scopes admin,editor,viewer,ingest [--name N] [--domains a.com,*.b.com]
                                create an API key; prints JSON with the secret (shown once)
  demo [--customers 3000] [--seed 1] [--workspace ID]
                                load a synthetic shop dataset (browsing, sign-ups, orders) as events
  settings get [--workspace ID|NAME]
  settings set KEY=VALUE … [--workspace ID|NAME]
                                read or change workspace settings (default workspace: "default");
                                dotted keys, JSON values: rate_limits.requests_per_minute=500
                                junk_identifiers='["demo"]' churn_threshold=0.6 merge_cap=null
  jobs [--queue Q] [--state queued|running|succeeded|dead] [--workspace ID] [--after JOB_ID]
                                list background jobs (50 a page) with counts per queue and state; JSON

Settings come from the environment (PORT, HOST, DATA_DIR, DATABASE_URL, REDIS_URL, …);
see README.md and docs/operations.md. Exit codes: 0 done, 1 failure, 2 usage or input error.`;

/** A mistake of the caller (arguments, input, settings): one line on stderr, exit code 2. */
class UsageError extends Error {}

const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);

/** Checks CLI input against the same schema the HTTP route uses, so both accept the same things. */
function check(schema: TSchema, value: unknown, what: string): void {
  const first = [...Value.Errors(schema, value)][0];
  if (first) {
    const path = first.instancePath.replace(/^\//, '');
    const message = path.startsWith('allowed_domains/')
      ? `"${Value.Pointer.Get(value, first.instancePath)}" is not a host name (shop.example.com) or wildcard (*.example.com)`
      : path === 'name' && first.message.includes('pattern')
        ? 'must not be blank'
        : first.message;
    throw new UsageError(`invalid ${what}${path ? ` ${path}` : ''}: ${message}`);
  }
}

/** Opens the database, brings its schema up to date, runs fn, closes. */
async function withDb<T>(
  config: Readonly<Config>,
  fn: (db: Db, applied: number[]) => Promise<T>,
): Promise<T> {
  const [{ openDb }, { migrate }] = await Promise.all([
    import('./platform/db'),
    import('./platform/db/migrate'),
  ]);
  const db = await openDb(config);
  try {
    const applied = await migrate(db);
    return await fn(db, applied);
  } finally {
    await db.close();
  }
}

const list = (s: string | undefined): string[] =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');

export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (see cdp --help)`);
  }
  const { values, positionals } = parsed;
  const [cmd, sub, ...rest] = positionals;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!cmd) throw new UsageError('no command given (see cdp --help)');

  switch (cmd) {
    case 'start':
      if (sub) throw new UsageError(`start takes no arguments, got "${sub}"`);
      await (await import('./serve')).serve(loadConfig());
      return -1; // keeps running until a signal
    case 'demo': {
      if (sub) throw new UsageError(`demo takes no arguments, got "${sub}"`);
      const { runDemoCommand } = await import('./modules/demo/demo.command');
      await runDemoCommand(loadConfig(), values);
      return 0;
    }
    case 'migrate':
      if (sub) throw new UsageError(`migrate takes no arguments, got "${sub}"`);
      print({ applied: await withDb(loadConfig(), async (_db, applied) => applied) });
      return 0;
    case 'workspace': {
      if (sub !== 'create') throw new UsageError('usage: cdp workspace create NAME');
      if (rest.length !== 1)
        throw new UsageError('usage: cdp workspace create NAME (quote a name with spaces)');
      const name = rest[0]!;
      check(CreateWorkspaceBody, { name }, 'workspace');
      const { createWorkspace } = await import('./modules/workspaces/workspaces.service');
      print(await withDb(loadConfig(), (db) => createWorkspace(db, name)));
      return 0;
    }
    case 'key': {
      if (sub !== 'create' || rest.length > 0) {
        throw new UsageError(
          'usage: cdp key create --workspace ID --scopes LIST [--name N] [--domains LIST]',
        );
      }
      if (!values.workspace) throw new UsageError('key create needs --workspace ID');
      if (!values.scopes) throw new UsageError('key create needs --scopes (admin,editor,viewer,ingest)');
      const input = {
        name: values.name ?? 'cli',
        scopes: list(values.scopes),
        allowed_domains: list(values.domains),
      };
      const unknown = input.scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
      if (unknown.length > 0) {
        throw new UsageError(`unknown scope(s): ${unknown.join(', ')}; use ${SCOPES.join(', ')}`);
      }
      check(CreateApiKeyBody, input, 'key');
      const workspaceId = values.workspace;
      const [{ createKey }, workspaces] = await Promise.all([
        import('./modules/api-keys/api-keys.service'),
        import('./modules/workspaces/workspaces.repo'),
      ]);
      const result = await withDb(loadConfig(), async (db) => {
        if (!isUuid(workspaceId) || !(await workspaces.findWorkspace(db, workspaceId))) {
          throw new UsageError(`no workspace ${workspaceId}`);
        }
        return createKey(db, workspaceId, input);
      });
      print(result);
      return 0;
    }
    case 'settings': {
      const { runSettingsCommand, parseAssignments } = await import('./modules/workspaces/settings.command');
      // Input mistakes are reported before the database is opened.
      if (sub === 'set') parseAssignments(rest);
      print(await withDb(loadConfig(), (db) => runSettingsCommand(db, sub, rest, values.workspace)));
      return 0;
    }
    case 'jobs': {
      if (sub) throw new UsageError(`jobs takes no arguments, got "${sub}"`);
      const { JOB_STATES, jobCounts, listJobs } = await import('./platform/jobs');
      const state = values.state as (typeof JOB_STATES)[number] | undefined;
      if (state !== undefined && !JOB_STATES.includes(state)) {
        throw new UsageError(`unknown job state "${state}"; use ${JOB_STATES.join(', ')}`);
      }
      if (values.workspace !== undefined && !isUuid(values.workspace)) {
        throw new UsageError(`no workspace ${values.workspace}`);
      }
      const filter = { queue: values.queue, state, workspaceId: values.workspace, after: values.after };
      print(
        await withDb(loadConfig(), async (db) => ({
          counts: await jobCounts(db, { queue: values.queue }),
          ...(await listJobs(db, filter)),
        })),
      );
      return 0;
    }
  }
  throw new UsageError(`unknown command "${cmd}" (see cdp --help)`);
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      workspace: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      domains: { type: 'string' },
      customers: { type: 'string' },
      seed: { type: 'string' },
      queue: { type: 'string' },
      state: { type: 'string' },
      after: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`cdp: ${err.message}\n`);
      process.exit(2);
    }
    // Operational failures (database unreachable, …) carry a system code: the message says it all.
    // Anything else is a bug, and its stack is what a report needs.
    const e = err as { code?: unknown; message?: string; stack?: string };
    const text = typeof e?.code === 'string' ? `${e.message} (${e.code})` : (e?.stack ?? String(err));
    process.stderr.write(`cdp: ${text}\n`);
    process.exit(1);
  },
);
