import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../../../test/wait';
import { createDownloads, type Downloads } from './download';
import type { App } from './types';

/** A bare app with one download route whose chunks come from `source`. */
async function serve(source: () => AsyncGenerator<string>, stallMs?: number) {
  const app = Fastify() as unknown as App;
  const downloads: Downloads = createDownloads(app, stallMs);
  const outcomes: string[] = [];
  app.get('/file', async (req, reply) => {
    const rest = source();
    const first = await rest.next();
    outcomes.push(
      await downloads.send(
        reply,
        { contentType: 'text/plain', filename: 'a file.txt', first: first.done ? '' : first.value, rest },
        req.log,
      ),
    );
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  apps.push(app);
  return {
    app,
    downloads,
    outcomes,
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/file`,
  };
}

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

interface Got {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  complete: boolean;
}

function get(url: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('error', () => {});
      res.on('close', () =>
        resolve({ status: res.statusCode!, headers: res.headers, text, complete: res.complete }),
      );
    })
      .on('error', reject)
      .end();
  });
}

describe('a download', () => {
  it('sends every chunk and ends with the terminating chunk, offering a safe file name', async () => {
    const { url, outcomes } = await serve(async function* () {
      yield 'a\n';
      yield 'b\n';
      yield 'c\n';
    });
    const got = await get(url);
    expect(got).toMatchObject({ status: 200, text: 'a\nb\nc\n', complete: true });
    expect(got.headers['content-disposition']).toBe('attachment; filename="a_file.txt"');
    expect(got.headers['cache-control']).toBe('no-store');
    await waitUntil(() => outcomes[0] === 'complete', { what: 'the download to end complete' });
  });

  it('ends incomplete when its source fails after the answer began, so the client can tell', async () => {
    const { url, outcomes } = await serve(async function* () {
      yield 'a\n';
      yield 'b\n';
      throw new Error('the database went away');
    });
    const got = await get(url);
    expect(got.status).toBe(200);
    expect(got.text).toBe('a\nb\n');
    expect(got.complete).toBe(false);
    await waitUntil(() => outcomes[0] === 'failed', { what: 'the download to end failed' });
  });

  it('stops reading its source when the client goes away', async () => {
    let pulled = 0;
    let stopped = false;
    const { url, outcomes } = await serve(async function* () {
      try {
        for (;;) {
          pulled++;
          yield 'x'.repeat(64 * 1024);
        }
      } finally {
        stopped = true;
      }
    });
    await new Promise<void>((resolve) => {
      const req = request(url, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.end();
    });
    await waitUntil(() => stopped, { what: 'the source to be stopped' });
    expect(outcomes).toEqual(['gone']);
    // Backpressure: the source was read about as far as the socket buffers reach, not endlessly.
    expect(pulled).toBeLessThan(200);
  });

  it('drops a reader that takes nothing for the stall limit, and stops its source', async () => {
    let stopped = false;
    const { url, outcomes } = await serve(async function* () {
      try {
        for (;;) yield 'x'.repeat(256 * 1024);
      } finally {
        stopped = true;
      }
    }, 300);
    const req = request(url, (res) => res.pause());
    req.on('error', () => {});
    req.end();
    await waitUntil(() => stopped, { what: 'the stalled download to be dropped' });
    expect(outcomes).toEqual(['gone']);
    req.destroy();
  });

  it('ends open downloads when the server closes, instead of waiting for them', async () => {
    const { url, app, downloads } = await serve(async function* () {
      for (;;) yield 'x'.repeat(256 * 1024);
    });
    const req = request(url, (res) => res.pause());
    req.on('error', () => {});
    req.end();
    await waitUntil(() => downloads.open() === 1, { what: 'the download to start' });
    await app.close();
    await waitUntil(() => downloads.open() === 0, { what: 'the open download to end' });
    req.destroy();
  });
});
