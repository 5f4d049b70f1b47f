import { type Config, ConfigError } from '../../config';
import type { Db } from '../../platform/db';
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

export interface DemoRun {
  customers: number;
  seed: number;
  workspace: string | null;
}

/** Checks the options before any database is opened. */
export function parseDemoOptions(opts: DemoCommandOptions): DemoRun {
  const customers = wholeNumber('customers', opts.customers, DEFAULT_CUSTOMERS, 1, MAX_CUSTOMERS);
  const seed = wholeNumber('seed', opts.seed, DEFAULT_SEED, 0, 2 ** 32 - 1);
  if (opts.workspace !== undefined && !isUuid(opts.workspace)) {
    throw new ConfigError(`--workspace must be a workspace id (UUID), got "${opts.workspace}"`);
  }
  return { customers, seed, workspace: opts.workspace ?? null };
}

/**
 * `cdp demo`: loads the synthetic dataset into the event log of a workspace (the `default` one unless
 * --workspace), straight into the database, so no API key is needed: from the CLI on a database it
 * opened, or inside the running service that holds the embedded one (src/commands.ts). Writes a
 * human summary to `out` and returns the figures.
 */
export async function runDemo(
  db: Db,
  config: Readonly<Config>,
  { customers, seed, workspace }: DemoRun,
  out: (line: string) => void,
): Promise<DemoLoadSummary> {
  let workspaceId = workspace;
  if (workspaceId !== null) {
    if (!(await repo.workspaceExists(db, workspaceId))) throw new ConfigError(`no workspace ${workspaceId}`);
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
}
