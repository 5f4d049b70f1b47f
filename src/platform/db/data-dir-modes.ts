import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The embedded database's files belong to the service's user alone: DATA_DIR and every directory in
 * it 0700, every file 0600 (docs/operations.md, "The data directory"). PostgreSQL keeps its own data
 * directory that way (and refuses to start otherwise); PGlite does not. Its first start copies the
 * cluster initdb made in memory into DATA_DIR as files of mode 0666 in directories of 0777 less the
 * umask, and files its WASM PostgreSQL writes through C's fopen (pg_internal.init, statistics) get
 * 0644, whatever the process umask, because PGlite's file layer sets every mode with an explicit
 * chmod. The WAL segments initdb wrote are recycled and refilled with live writes, so "readable by
 * every local user" meant customers' data.
 *
 * So the service narrows the modes itself: before PGlite opens the directory (what it finds there
 * is reported, as a start that found wider modes), and right after (what PGlite's own start wrote);
 * in between and afterwards, `keepPglitePrivate` strips the group and other bits from every mode
 * PGlite's file layer sets. The directory itself is 0700 first of all: nobody else can even reach a
 * file inside it, however briefly that file is wider than 0600.
 */

export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;
/** Group and other permission bits: any of them set is "wider" than the service allows. */
const OTHERS = 0o077;

/** What a pass narrowed: how many files and directories, and how many had each mode found. */
export interface NarrowedModes {
  files: number;
  directories: number;
  /** Count by the mode found, in octal (`{"0666": 968, "0755": 26}`). */
  modes: Record<string, number>;
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8).padStart(3, '0')}`;

/**
 * Sets DATA_DIR and everything in it that any other user may read, write or enter to 0700
 * (directories) or 0600 (files), and answers what it changed. Symbolic links are neither followed
 * nor changed (PGlite makes none; a link placed by someone else must not redirect a chmod). Entries
 * that vanish during the walk are skipped.
 */
export function narrowDataDirModes(dir: string): NarrowedModes {
  const out: NarrowedModes = { files: 0, directories: 0, modes: {} };
  const narrow = (path: string, isDir: boolean): boolean => {
    let mode: number;
    try {
      const st = lstatSync(path);
      if (st.isSymbolicLink() || !(st.isDirectory() || st.isFile())) return false;
      mode = st.mode;
    } catch {
      return false;
    }
    if ((mode & OTHERS) !== 0) {
      try {
        chmodSync(path, isDir ? DIR_MODE : FILE_MODE);
      } catch {
        return isDir;
      }
      if (isDir) out.directories++;
      else out.files++;
      const found = octal(mode);
      out.modes[found] = (out.modes[found] ?? 0) + 1;
    }
    return isDir;
  };
  // Iterative: a deep tree must not overflow the stack.
  const pending: string[] = narrow(dir, true) ? [dir] : [];
  while (pending.length > 0) {
    const current = pending.pop()!;
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.isSymbolicLink()) continue;
      const path = join(current, e.name);
      if (e.isDirectory()) {
        narrow(path, true);
        pending.push(path);
      } else if (e.isFile()) narrow(path, false);
    }
  }
  return out;
}

/** The part of PGlite's Emscripten file system this module changes (Module.FS). */
interface EmscriptenFs {
  chmod(path: unknown, mode: number, dontFollow?: boolean): unknown;
  mknod(path: string, mode: number, dev: number): unknown;
}

const patched = new WeakSet<object>();

/**
 * From now on every file and directory PGlite creates or chmods is owner-only: its file layer
 * creates with `mknod` and sets modes with `chmod` (Emscripten's FS, which PGlite exposes as
 * `Module.FS`), and both get the group and other bits taken off. Answers false when this PGlite
 * exposes no such file system (a future version): the sweeps at each start still narrow what it
 * wrote, and the data directory's own 0700 keeps everyone else out meanwhile.
 */
export function keepPglitePrivate(pglite: unknown): boolean {
  const fs = (pglite as { Module?: { FS?: Partial<EmscriptenFs> } } | null)?.Module?.FS;
  if (!fs || typeof fs.chmod !== 'function' || typeof fs.mknod !== 'function') return false;
  if (patched.has(fs)) return true;
  const chmod = fs.chmod.bind(fs);
  const mknod = fs.mknod.bind(fs);
  fs.chmod = (path, mode, dontFollow) => chmod(path, mode & ~OTHERS, dontFollow);
  fs.mknod = (path, mode, dev) => mknod(path, mode & ~OTHERS, dev);
  patched.add(fs);
  return true;
}
