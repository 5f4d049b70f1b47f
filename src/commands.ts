import { parseArgs } from 'node:util';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { Config } from './config';
import { CreateApiKeyBody } from './modules/api-keys/api-keys.schemas';
import type { SettingsStore } from './modules/workspaces';
import { CreateWorkspaceBody } from './modules/workspaces/workspaces.schemas';
import type { Db } from './platform/db';
import { SCOPES } from './platform/http/scopes';
import { isUuid } from './platform/ids';

/**
 * The `cdp` commands that work on the database, parsed and checked once and run in either of two
 * places: by the CLI on a database it opens itself, or, while a service holds the embedded
 * database, inside that service (POST /system/commands, commands.routes.ts), which runs the very
 * same function on its own connection. Same input checks, same output, either way.
 *
 * The modules are imported when a command runs, so `--help` and argument mistakes answer without
 * loading (and transpiling) the whole service.
 */

export const USAGE = `usage: cdp <command>

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

  export profiles|events|orders|segment-members [--segment ID] [--format ndjson|csv]
         [--since T] [--until T] [--after ID] --out FILE|-
                                write a workspace export to FILE (csv when it ends in .csv), with
                                progress on stderr; resumes by itself after a dropped connection
  import FILE                   load NDJSON events (a backfill, or an events export) through
                                POST /tenant/ingest/batch; prints a summary (rejected lines) as JSON
                                export and import talk HTTP to a running service: --url URL (default
                                $CDP_URL, else http://127.0.0.1:8080) and --key KEY (default
                                $CDP_API_KEY, an admin key for export, ingest or admin for import)

While \`cdp start\` runs on the embedded database (DATA_DIR), the commands above go through it;
\`migrate\` waits for it to stop. Settings come from the environment (PORT, HOST, DATA_DIR,
DATABASE_URL, REDIS_URL, …); see README.md and docs/operations.md.
Exit codes: 0 done, 1 failure (DATA_DIR in use included; for import, any line rejected), 2 usage
or input error.`;

/** A mistake of the caller (arguments, input, settings): one line on stderr, exit code 2. */
export class UsageError extends Error {}

/** Where a command runs: the database, and what surrounds it there. */
export interface CommandContext {
  db: Db;
  config: Readonly<Config>;
  /** The migrations this run applied first (a running service applied its own when it started). */
  applied: number[];
  /** The running service's settings store, so a change is in effect when the command answers. */
  settings: SettingsStore | null;
  /** Human output (the demo's progress). */
  out(line: string): void;
}

export interface DbCommand {
  /** Needs the database to itself (`migrate`): never runs inside a running service. */
  exclusive: boolean;
  /** Returns the JSON to print, or undefined when it wrote lines to `out`. */
  run(ctx: CommandContext): Promise<unknown>;
}

/** A command that talks HTTP to a running service (export, import): it answers its exit code. */
export interface ClientCommand {
  run(): Promise<number>;
}

export type Plan =
  | { kind: 'help' }
  | { kind: 'start' }
  | { kind: 'db'; name: string; command: DbCommand }
  | { kind: 'client'; name: string; command: ClientCommand };

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

const list = (s: string | undefined): string[] =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');

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
      segment: { type: 'string' },
      format: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      out: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

const db = (name: string, command: DbCommand): Plan => ({ kind: 'db', name, command });

/**
 * Parses and checks the arguments; throws UsageError for any mistake, before a database is opened.
 * Async because a command's checks may live in its module, loaded on demand.
 */
export async function planCommand(argv: string[]): Promise<Plan> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (see cdp --help)`);
  }
  const { values, positionals } = parsed;
  const [cmd, sub, ...rest] = positionals;
  // `cdp help` too: `npm run cdp --help` is npm's own help (npm reads flags before `--`).
  if (values.help || cmd === 'help') return { kind: 'help' };
  if (!cmd) throw new UsageError('no command given (see cdp --help)');

  switch (cmd) {
    case 'start':
      if (sub) throw new UsageError(`start takes no arguments, got "${sub}"`);
      return { kind: 'start' };
    case 'demo': {
      if (sub) throw new UsageError(`demo takes no arguments, got "${sub}"`);
      const { parseDemoOptions, runDemo } = await import('./modules/demo/demo.command');
      const options = parseDemoOptions(values);
      return db('demo', {
        exclusive: false,
        async run(ctx) {
          await runDemo(ctx.db, ctx.config, options, ctx.out);
          return undefined;
        },
      });
    }
    case 'migrate':
      if (sub) throw new UsageError(`migrate takes no arguments, got "${sub}"`);
      return db('migrate', { exclusive: true, run: async (ctx) => ({ applied: ctx.applied }) });
    case 'workspace': {
      if (sub !== 'create') throw new UsageError('usage: cdp workspace create NAME');
      if (rest.length !== 1)
        throw new UsageError('usage: cdp workspace create NAME (quote a name with spaces)');
      const name = rest[0]!;
      check(CreateWorkspaceBody, { name }, 'workspace');
      return db('workspace create', {
        exclusive: false,
        async run(ctx) {
          const { createWorkspace } = await import('./modules/workspaces/workspaces.service');
          return createWorkspace(ctx.db, name);
        },
      });
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
      return db('key create', {
        exclusive: false,
        async run(ctx) {
          const [{ createKey }, workspaces] = await Promise.all([
            import('./modules/api-keys/api-keys.service'),
            import('./modules/workspaces/workspaces.repo'),
          ]);
          if (!isUuid(workspaceId) || !(await workspaces.findWorkspace(ctx.db, workspaceId))) {
            throw new UsageError(`no workspace ${workspaceId}`);
          }
          return createKey(ctx.db, workspaceId, input);
        },
      });
    }
    case 'settings': {
      const { runSettingsCommand, parseAssignments } = await import('./modules/workspaces/settings.command');
      // Input mistakes are reported before the database is opened.
      if (sub === 'set') parseAssignments(rest);
      return db('settings', {
        exclusive: false,
        run: (ctx) => runSettingsCommand(ctx.db, sub, rest, values.workspace, ctx.settings),
      });
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
      return db('jobs', {
        exclusive: false,
        run: async (ctx) => ({
          counts: await jobCounts(ctx.db, { queue: values.queue }),
          ...(await listJobs(ctx.db, filter)),
        }),
      });
    }
    case 'export': {
      const { parseExportOptions, runExport } = await import('./export.command');
      const options = parseExportOptions(positionals.slice(1), values);
      return { kind: 'client', name: 'export', command: { run: () => runExport(options) } };
    }
    case 'import': {
      const { parseImportOptions, runImport } = await import('./import.command');
      const options = parseImportOptions(positionals.slice(1), values);
      return { kind: 'client', name: 'import', command: { run: () => runImport(options) } };
    }
  }
  throw new UsageError(`unknown command "${cmd}" (see cdp --help)`);
}
