import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LANE_PRIORITY, withLanes } from './lanes';
import { deserializeDbError, INIT_FLAG, type Reply, type Request, type ThreadData } from './pglite-messages';
import type { Db, Queryable, QueryResult } from './port';

/**
 * How to run pglite-thread outside this thread. The sources are TypeScript run by tsx without a
 * build step, and neither a worker nor a child inherits the main thread's loader. tsx's CommonJS
 * hook is used rather than its ESM one: the ESM hook runs its own loader thread, which measured
 * +95 MB RSS for the worker; the CommonJS hook transpiles in the thread itself, at no measurable cost.
 * Compiled to .js, the entry runs directly.
 */
function threadEntry(): { file: string; boot: string | null } {
  const here = fileURLToPath(import.meta.url);
  const ext = extname(here);
  // Beside this module: pglite-thread.ts in src/, the bundle's pglite-thread.js entry beside its
  // chunks (test/global-setup.ts).
  const file = join(dirname(here), `pglite-thread${ext}`);
  if (ext !== '.ts') return { file, boot: null };
  const tsxCjs = createRequire(import.meta.url).resolve('tsx/cjs/api');
  return { file, boot: `require(${JSON.stringify(tsxCjs)}).register(); require(${JSON.stringify(file)});` };
}

export function spawnPgliteThread(data: ThreadData): Worker {
  const { file, boot } = threadEntry();
  return boot ? new Worker(boot, { eval: true, workerData: data }) : new Worker(file, { workerData: data });
}

/**
 * Creates the database cluster in `dataDir` (initdb) in a short-lived child process. initdb runs a
 * second PGlite instance; in this process, even in a worker thread that then ends, ≈ 120 MB of it
 * stayed resident for good (measured), while a child's memory all goes back when it exits.
 */
export async function initClusterInChild(dataDir: string): Promise<void> {
  const { file, boot } = threadEntry();
  const args = boot ? ['-e', boot, INIT_FLAG, dataDir] : [file, INIT_FLAG, dataDir];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  // A service stopped during its first start must not leave initdb running behind it: the next
  // start creates the cluster again (over whatever the interrupted one left).
  const killChild = () => child.kill('SIGKILL');
  process.once('exit', killChild);
  child.once('exit', () => process.off('exit', killChild));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr = (stderr + d).slice(-4000);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`creating the embedded database in ${dataDir} failed: ${stderr.trim()}`);
}

/** Resolves when the thread posts { ready }, rejects if it fails or exits first. */
function whenReady(worker: Worker): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: Reply) => {
      if ('ready' in m) {
        cleanup();
        resolve();
      }
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onExit = (code: number) => {
      cleanup();
      reject(new Error(`PGlite thread exited (code ${code}) before it was ready`));
    };
    const cleanup = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/**
 * The storage port over a PGlite living in a worker thread: every call is a message, a transaction
 * is a lease on the thread's single connection from BEGIN to COMMIT/ROLLBACK. The main thread never
 * runs SQL, so a long statement delays other statements but not HTTP.
 */
export async function createPgliteWorkerDb(opts: {
  dataDir: string | null;
  template?: string | null;
}): Promise<Db> {
  const worker = spawnPgliteThread({ dataDir: opts.dataDir, template: opts.template ?? null });
  const pending = new Map<number, Pending>();
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let nextId = 1;
  let failure: Error | null = null;

  const failAll = (err: Error) => {
    failure ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  worker.on('message', (m: Reply) => {
    if ('notify' in m) {
      for (const h of handlers.get(m.notify) ?? []) {
        try {
          h(m.payload);
        } catch {
          // A listener's bug must not disturb the others.
        }
      }
      return;
    }
    if (!('id' in m)) return;
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(deserializeDbError(m.error));
  });
  worker.on('error', (err) => failAll(new Error(`PGlite thread failed: ${err.message}`)));
  worker.on('exit', (code) => failAll(new Error(`PGlite thread exited (code ${code})`)));

  try {
    await whenReady(worker);
  } catch (err) {
    await worker.terminate();
    throw err;
  }

  // Omit<Request, 'id'> does not distribute over the union; this does.
  type Call = Request extends infer R ? (R extends Request ? Omit<R, 'id'> : never) : never;
  const call = <T>(req: Call): Promise<T> => {
    if (failure) return Promise.reject(failure);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        worker.postMessage({ ...req, id });
      } catch (err) {
        // A parameter that cannot be cloned (a function, a symbol) fails here, not in the thread.
        pending.delete(id);
        reject(err as Error);
      }
    });
  };

  const listen: Db['listen'] = async (channel, handler) => {
    let set = handlers.get(channel);
    if (!set) {
      set = new Set();
      handlers.set(channel, set);
      await call<null>({ op: 'listen', channel });
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
    };
  };
  const close = async () => {
    if (failure) {
      await worker.terminate();
      return;
    }
    try {
      await call<null>({ op: 'close' });
    } finally {
      failure = new Error('database is closed');
      await worker.terminate();
    }
  };

  return withLanes((laneName) => {
    const priority = LANE_PRIORITY[laneName];
    return {
      engine: 'pglite',
      query: <R>(sql: string, params?: readonly unknown[]) =>
        call<QueryResult<R>>({ op: 'query', sql, params, priority }),
      exec: (sql) => call<void>({ op: 'exec', sql, priority }),
      async transaction(fn) {
        const lease = await call<number>({ op: 'begin', priority });
        let finished = false;
        const live = () => {
          if (finished) throw new Error('transaction is already finished');
        };
        const tx: Queryable = {
          query: async <R>(sql: string, params?: readonly unknown[]) => {
            live();
            return call<QueryResult<R>>({ op: 'query', sql, params, lease });
          },
          exec: async (sql) => {
            live();
            await call<void>({ op: 'exec', sql, lease });
          },
        };
        let result: Awaited<ReturnType<typeof fn>>;
        try {
          result = await fn(tx);
        } catch (err) {
          finished = true;
          await call<void>({ op: 'end', lease, commit: false }).catch(() => {});
          throw err;
        }
        finished = true;
        await call<void>({ op: 'end', lease, commit: true });
        return result;
      },
      listen,
      // Notifications only ever come from this same process: nothing else can change the database.
      listening: true,
      close,
    };
  });
}
