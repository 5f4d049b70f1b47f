import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { App } from './types';

/**
 * Long answers streamed from a source of text chunks (workspace exports): written with
 * backpressure, so a slow reader slows the source down instead of piling the answer up in memory,
 * and stopped as soon as the reader goes away, stalls, or the server shuts down.
 *
 * The status is sent with the first chunk, so whatever fails before it is an ordinary error answer
 * (the envelope); the caller reads the first chunk before calling `send`. Whatever fails after can
 * no longer change the status: the connection is then closed without the chunked encoding's
 * terminating chunk, which every HTTP client reports as an incomplete answer (Node: `res.complete`
 * false and an `aborted` / ECONNRESET error; curl: exit code 18, "transfer closed with outstanding
 * read data remaining"). A complete answer always ends with that terminating chunk.
 */

/** A reader that takes nothing for this long is dropped: it holds the export's slot and nothing else moves. */
export const DOWNLOAD_STALL_MS = 60_000;

export interface Download {
  contentType: string;
  /** The file name offered (Content-Disposition: attachment): letters, digits, `.`, `_`, `-` only. */
  filename: string;
  /** The first chunk, read before the answer starts (its failure was an ordinary error answer). */
  first: string;
  /** The rest, pulled one chunk at a time as the socket drains; ended early with return(). */
  rest: AsyncIterator<string>;
}

export interface Downloads {
  /** Answers 200 with the download; resolves when it ended (complete, dropped or failed). */
  send(
    reply: FastifyReply,
    download: Download,
    log: FastifyBaseLogger,
  ): Promise<'complete' | 'gone' | 'failed'>;
  /** Downloads in progress on this process. */
  open(): number;
}

const req = (reply: FastifyReply) => reply.request.raw;

/** How long a connection ended incomplete may take to close before it is cut. */
const END_GRACE_MS = 2_000;

/**
 * Ends the answer without its terminating chunk: the connection is closed after everything written
 * so far (a destroy could drop unsent bytes, or reset the connection under data the client has not
 * read yet), and cut if the client does not close its side soon.
 */
function endIncomplete(res: ServerResponse): void {
  const socket = res.socket;
  if (!socket) {
    res.destroy();
    return;
  }
  socket.end();
  setTimeout(() => socket.destroy(), END_GRACE_MS).unref();
}

/** One per app: open downloads end (incomplete, so their clients resume) when the server closes. */
export function createDownloads(app: App, stallMs = DOWNLOAD_STALL_MS): Downloads {
  const open = new Set<ServerResponse>();
  // A download never goes idle: without this, closing the server would wait for each to finish.
  app.addHook('preClose', async () => {
    for (const res of open) endIncomplete(res);
  });

  return {
    open: () => open.size,
    async send(reply, d, log) {
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': d.contentType,
        'content-disposition': `attachment; filename="${d.filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      open.add(res);
      // The client may have left while the first page was read: its 'close' came and went.
      let gone = res.destroyed || req(reply).socket.destroyed;
      const onClose = () => {
        gone = true;
      };
      res.on('close', onClose);

      /** Writes a chunk; waits while the socket's buffer is full. False when the reader is gone or stalled. */
      const write = async (chunk: string): Promise<boolean> => {
        if (gone || res.destroyed) return false;
        if (chunk !== '' && !res.write(chunk)) {
          const drained = await new Promise<boolean>((resolve) => {
            const done = (ok: boolean) => () => {
              clearTimeout(timer);
              res.off('drain', onDrain);
              res.off('close', onGone);
              resolve(ok);
            };
            const onDrain = done(true);
            const onGone = done(false);
            const timer = setTimeout(done(false), stallMs);
            res.on('drain', onDrain);
            res.on('close', onGone);
          });
          if (!drained) return false;
        }
        return !gone;
      };

      let outcome: 'complete' | 'gone' | 'failed' = 'gone';
      // HEAD: the headers a GET would get, and none of the work of its body.
      if (reply.request.method === 'HEAD') {
        res.end();
        open.delete(res);
        res.off('close', onClose);
        await d.rest.return?.(undefined).catch(() => {});
        return 'complete';
      }
      try {
        if (await write(d.first)) {
          for (;;) {
            const next = await d.rest.next();
            if (next.done) {
              outcome = 'complete';
              break;
            }
            if (gone || !(await write(next.value))) break;
          }
        }
        if (outcome === 'complete' && !gone) res.end();
        else res.destroy();
      } catch (err) {
        outcome = 'failed';
        log.error({ err }, 'download failed after it began: its answer ends incomplete');
        endIncomplete(res);
      } finally {
        open.delete(res);
        res.off('close', onClose);
        // Stops the source where it stands (its next page is never read).
        await d.rest.return?.(undefined).catch(() => {});
      }
      return gone && outcome === 'complete' ? 'gone' : outcome;
    },
  };
}
