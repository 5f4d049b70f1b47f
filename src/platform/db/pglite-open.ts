import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { keepPglitePrivate, narrowDataDirModes } from './data-dir-modes';

/** Opening an embedded PGlite: its data directory, its server settings, its type parsers. */

const INT8 = 20;
const NUMERIC = 1700;

/**
 * Server settings on top of PGlite's defaults. PGlite's initdb picks shared_buffers = 128 MB, and
 * the WASM heap grows past it as pages are touched (≈ 190 MB of linear memory, ≈ 350 MB RSS once
 * open). 32 MB of buffers keeps the heap at its 128 MB minimum; pages beyond it are re-read from
 * the data files through the OS page cache. Measured: RSS ≈ 240 MB after open instead of ≈ 350.
 */
export const PGLITE_START_PARAMS: readonly string[] = [
  ...PGlite.defaultStartParams,
  '-c',
  'shared_buffers=32MB',
  '-c',
  'temp_buffers=2MB',
  // Full-page images guard against a page half written when the machine stops mid-write. PGlite
  // never fsyncs, so it does not survive that anyway; a process crash cannot tear a page (each is
  // one write call). Without them the periodic checkpoints (pglite-session.ts) cost nothing
  // measurable; with them, the first change of every page after each checkpoint logs the whole
  // page: 1.5× the WAL and a quarter fewer writes per second in a write-heavy loop (measured).
  '-c',
  'full_page_writes=off',
];

/**
 * Opens PGlite with the service's settings: numbers for int8/numeric, the memory settings above.
 * Its files stay owner-only (data-dir-modes.ts): what its open wrote is narrowed at once, without a
 * report (every start writes pg_internal.init at 0644), and what it writes later is created so.
 */
export async function openPglite(dataDir: string | null, template: string | null = null): Promise<PGlite> {
  if (dataDir) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // A new database (in memory, or a directory without a cluster) starts from the template when
  // there is one: initdb and every migration skipped (config.ts, PGLITE_TEMPLATE).
  const fresh = template !== null && (!dataDir || !clusterExists(dataDir));
  const pglite = await PGlite.create({
    ...(dataDir ? { dataDir: resolve(dataDir) } : {}),
    ...(fresh ? { loadDataDir: new Blob([readFileSync(template)]) } : {}),
    startParams: [...PGLITE_START_PARAMS],
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
  if (dataDir) {
    keepPglitePrivate(pglite);
    narrowDataDirModes(dataDir);
  }
  return pglite;
}

/** True when the directory already holds a database cluster (initdb has run). */
export function clusterExists(dataDir: string): boolean {
  return existsSync(join(dataDir, 'PG_VERSION'));
}
