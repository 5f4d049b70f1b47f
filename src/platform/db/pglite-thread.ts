/**
 * The PGlite side of the worker-thread adapter (pglite-worker.ts is the other side; the messages
 * are in pglite-messages.ts). It owns the PGlite instance and its one connection, so a long
 * statement runs here while the main thread keeps serving. Run as a child process instead
 * (`<entry> cdp-pglite-init DIR`), it only creates the database cluster in DIR and exits (first
 * start, see pglite-worker.ts).
 *
 * A lease is a transaction holding the connection: statements that name it run inside it, every
 * other statement waits in the session's queue until it ends (see pglite-session.ts). Requests are
 * posted without waiting for earlier replies, so this thread runs them back to back.
 *
 * Loaded as CommonJS (see pglite-worker.ts): no top-level await, no import.meta.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { INIT_FLAG, type Reply, type Request, serializeDbError, type ThreadData } from './pglite-messages';
import { clusterExists, openPglite } from './pglite-open';
import { createPgliteSession, type Lease } from './pglite-session';

async function serve(data: ThreadData): Promise<void> {
  const port = parentPort!;
  const session = createPgliteSession(await openPglite(data.dataDir, data.template));
  const leases = new Map<number, Lease>();
  let nextLease = 1;

  const leaseOf = (id: number): Lease => {
    const lease = leases.get(id);
    if (!lease) throw new Error('transaction is already finished');
    return lease;
  };

  async function handle(req: Request): Promise<unknown> {
    switch (req.op) {
      case 'query':
        return req.lease === undefined
          ? session.query(req.sql, req.params, req.priority)
          : leaseOf(req.lease).query(req.sql, req.params);
      case 'exec':
        return req.lease === undefined
          ? session.exec(req.sql, req.priority)
          : leaseOf(req.lease).exec(req.sql);
      case 'begin': {
        const lease = await session.begin(req.priority);
        const id = nextLease++;
        leases.set(id, lease);
        return id;
      }
      case 'end': {
        const lease = leaseOf(req.lease);
        leases.delete(req.lease);
        return lease.end(req.commit);
      }
      case 'listen':
        await session.listen(req.channel, (payload) => port.postMessage({ notify: req.channel, payload }));
        return null;
      case 'close':
        await session.close();
        return null;
    }
  }

  port.on('message', (req: Request) => {
    handle(req).then(
      (value) => port.postMessage({ id: req.id, ok: true, value: value ?? null } satisfies Reply),
      (err: unknown) =>
        port.postMessage({ id: req.id, ok: false, error: serializeDbError(err) } satisfies Reply),
    );
  });
  port.postMessage({ ready: true } satisfies Reply);
}

/** Child-process mode: initdb into the directory, then exit (the OS takes all its memory back). */
async function init(dataDir: string): Promise<void> {
  if (!clusterExists(dataDir)) await (await openPglite(dataDir)).close();
}

const fail = (err: unknown) => {
  // In a worker this surfaces as its 'error' event; in a child process as a non-zero exit.
  process.nextTick(() => {
    throw err;
  });
};

if (!isMainThread) {
  serve(workerData as ThreadData).catch(fail);
} else {
  const at = process.argv.indexOf(INIT_FLAG);
  const dir = at >= 0 ? process.argv[at + 1] : undefined;
  if (dir) init(dir).catch(fail);
}
