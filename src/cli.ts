import { hostname } from 'node:os';
import { type DbCommand, planCommand, USAGE, UsageError } from './commands';
import { type Config, ConfigError, loadConfig } from './config';
import {
  DataDirInUseError,
  describeHolder,
  elsewhereHint,
  readLockHolder,
} from './platform/db/data-dir-lock';

// The service (serve.ts), the database drivers and the modules are imported when a command needs them, so
// `--help` and argument mistakes answer without loading (and transpiling) the whole service.

const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Opens the database (locking an embedded one), brings its schema up to date, runs the command, closes. */
async function runHere(config: Readonly<Config>, command: DbCommand): Promise<unknown> {
  const [{ openDb }, { migrate }] = await Promise.all([
    import('./platform/db'),
    import('./platform/db/migrate'),
  ]);
  const db = await openDb(config);
  try {
    const applied = await migrate(db);
    return await command.run({ db, config, applied, settings: null, out: say });
  } finally {
    await db.close();
  }
}

/**
 * The embedded database serves one process. While another holds DATA_DIR, a command goes through
 * it when it is a service answering HTTP (it runs the command on its own connection); otherwise,
 * and for `migrate`, the command is refused before any file of the database is touched.
 */
async function runDbCommand(
  config: Readonly<Config>,
  name: string,
  command: DbCommand,
  argv: string[],
): Promise<unknown> {
  const embedded = !config.databaseUrl && config.dataDir !== ':memory:';
  const holder = embedded ? readLockHolder(config.dataDir) : null;
  if (!holder) return runHere(config, command);

  const inUse = `DATA_DIR ${config.dataDir} is in use by ${describeHolder(holder)}`;
  if (holder.host !== hostname()) {
    // Its address is another machine's (or container's) loopback.
    throw new DataDirInUseError(config.dataDir, holder, `${inUse}${elsewhereHint(config.dataDir, holder)}`);
  }
  if (command.exclusive) {
    throw new DataDirInUseError(
      config.dataDir,
      holder,
      `${inUse}; \`cdp ${name}\` needs the database to itself: stop it first, then run this again ` +
        '(a service applies the migrations itself when it starts)',
    );
  }
  if (!holder.url) {
    throw new DataDirInUseError(
      config.dataDir,
      holder,
      `${inUse}, which does not answer HTTP (yet): wait until it listens (\`cdp start\`) or ends, ` +
        'or stop it, then run this again',
    );
  }
  const { sendToService } = await import('./command-client');
  const { output, lines } = await sendToService(holder, argv);
  if (lines.length > 0) {
    say(`Through the service running on ${config.dataDir} (PID ${holder.pid}, ${holder.url}):`);
    for (const line of lines) say(line);
  }
  return output ?? undefined;
}

export async function main(argv: string[]): Promise<number> {
  const plan = await planCommand(argv);
  if (plan.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (plan.kind === 'start') {
    await (await import('./serve')).serve(loadConfig());
    return -1; // keeps running until a signal
  }
  // export and import are clients of a running service: no database, no service settings.
  if (plan.kind === 'client') return plan.command.run();
  const output = await runDbCommand(loadConfig(), plan.name, plan.command, argv);
  if (output !== undefined) print(output);
  return 0;
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
    // Another process has the embedded database: the message names it and says what to do.
    if (err instanceof DataDirInUseError) {
      process.stderr.write(`cdp: ${err.message}\n`);
      process.exit(1);
    }
    // Operational failures (database unreachable, …) carry a system code: the message says it all.
    // Anything else is a bug, and its stack is what a report needs.
    const e = err as { code?: unknown; message?: string; stack?: string };
    const text = typeof e?.code === 'string' ? `${e.message} (${e.code})` : (e?.stack ?? String(err));
    process.stderr.write(`cdp: ${text}\n`);
    process.exit(1);
  },
);
