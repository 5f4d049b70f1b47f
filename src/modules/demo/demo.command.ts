import { type Config, ConfigError } from '../../config';
import { openDb } from '../../platform/db';
import { migrate } from '../../platform/db/migrate';
import { isUuid } from '../../platform/ids';
import { bootstrapDefaultWorkspace } from '../workspaces/workspaces.service';
import * as repo from './demo.repo';
import { type DemoLoadSummary, loadDemoDataset } from './demo.service';

export const DEFAULT_CUSTOMERS = 3000;
export const MAX_CUSTOMERS = 100_000;
export const DEFAULT_SEED = 1;

export interface DemoCommandOptions {
  workspace?: string | undefined;
  customers?: string | undefined;
  seed?: string | undefined;
}

function wholeNumber(
  name: string,
  v: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new ConfigError(`--${name} must be a whole number from ${min} to ${max}, got "${v}"`);
  }
  return Number(v);
}

/**
 * The embedded database belongs to one process: opening DATA_DIR while `cdp start` has it open
 * would corrupt it (PGlite takes no lock). A service answering on the configured address is taken
 * as the sign that it is open.
 */
async function refuseIfEmbeddedInUse(config: Readonly<Config>): Promise<void> {
  if (config.databaseUrl || config.dataDir === ':memory:') return;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/health`;
  const answered = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
    (r) => r.ok,
    () => false,
  );
  if (answered) {
    throw new ConfigError(
      `a service is running on ${url.replace('/health', '')} with the embedded database in ${config.dataDir}; ` +
        'stop it first (the embedded database serves one process), run `cdp demo`, then start it again: ' +
        'the events are processed on start. With DATABASE_URL (PostgreSQL) no stop is needed.',
    );
  }
}

/**
 * `cdp demo`: loads the synthetic dataset into the event log of a workspace (the `default` one unless
 * --workspace), straight into the database so no running server or API key is needed. Writes a
 * human summary to `out` and returns the figures.
 */
export async function runDemoCommand(
  config: Readonly<Config>,
  opts: DemoCommandOptions,
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<DemoLoadSummary> {
  const customers = wholeNumber('customers', opts.customers, DEFAULT_CUSTOMERS, 1, MAX_CUSTOMERS);
  const seed = wholeNumber('seed', opts.seed, DEFAULT_SEED, 0, 2 ** 32 - 1);
  if (opts.workspace !== undefined && !isUuid(opts.workspace)) {
    throw new ConfigError(`--workspace must be a workspace id (UUID), got "${opts.workspace}"`);
  }
  await refuseIfEmbeddedInUse(config);

  const db = await openDb(config);
  try {
    await migrate(db);
    let workspaceId = opts.workspace ?? null;
    if (workspaceId !== null) {
      if (!(await repo.workspaceExists(db, workspaceId)))
        throw new ConfigError(`no workspace ${workspaceId}`);
    } else {
      workspaceId = await repo.findDefaultWorkspaceId(db);
      if (workspaceId === null) {
        const created = await bootstrapDefaultWorkspace(db, config.initialAdminKey);
        if (!created) throw new ConfigError('no workspace named "default"; pass --workspace ID');
        workspaceId = created.workspace.id;
        // Printed exactly once, as `cdp start` would have on the first start of an empty database.
        out(`Created workspace "default" (${workspaceId}).`);
        out(`Admin API key (shown only now, store it safely):\n\n  ${created.api_key.api_key}\n`);
      }
    }

    const started = Date.now();
    out(`Loading the demo dataset (seed ${seed}, ${customers} customers) into workspace ${workspaceId}…`);
    const summary = await loadDemoDataset(db, workspaceId, { seed, customers, now: new Date() });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (summary.stored === 0) {
      out(`Nothing new: this dataset (seed ${seed}) is already loaded. Use --seed N for another one.`);
    } else {
      out(
        `${summary.stored} events queued in ${seconds} s (${customers} customers, ${summary.orders} orders); ` +
          'they are processed by the running service (or on next start).',
      );
    }
    return summary;
  } finally {
    await db.close();
  }
}
