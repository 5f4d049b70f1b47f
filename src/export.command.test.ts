import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseExportOptions, runExport } from './export.command';
import { createRetries } from './transfer';

/**
 * `cdp export` against a scripted service: each request is answered by the next step of a script,
 * so that every way an export can be interrupted is met in one run.
 */
type Step = (req: IncomingMessage, res: ServerResponse) => void;

const dir = mkdtempSync(join(tmpdir(), 'cdp-export-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  server = null;
});

async function scripted(steps: Step[]): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  server = createServer((req, res) => {
    seen.push(req.url!);
    const step = steps.shift();
    if (!step) res.writeHead(500).end('script over');
    else step(req, res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

const record = (id: string) => `{"id":"${id}","n":1}\n`;
const error =
  (status: number, body: object, headers: Record<string, string> = {}): Step =>
  (_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const complete =
  (ids: string[]): Step =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(ids.map(record).join(''));
  };
/** Sends these records and half of another, then drops the connection without the last chunk. */
const cut =
  (ids: string[]): Step =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write(`${ids.map(record).join('')}{"id":"half`);
    setImmediate(() => res.socket?.destroy());
  };

const quiet = { write: () => true };
const fastRetries = () => createRetries(4, 1, 5);

function options(url: string, out: string, extra: string[] = []) {
  const values: Record<string, string> = { out, url, key: 'cdp_sk_test' };
  for (let i = 0; i < extra.length; i += 2) values[extra[i]!.slice(2)] = extra[i + 1]!;
  return parseExportOptions(['events'], values, {});
}

describe('cdp export, interrupted', () => {
  it('waits out 429 and 503, resumes after drops, steps back over a record erased meanwhile', async () => {
    const { url, seen } = await scripted([
      error(429, { error_code: 'RATE_LIMITED', message: 'busy' }, { 'retry-after': '0' }),
      cut(['r1', 'r2', 'r3']),
      error(404, {
        error_code: 'NOT_FOUND',
        message: 'gone',
        details: [{ path: '/after', message: 'gone' }],
      }),
      error(503, { error_code: 'UNAVAILABLE', message: 'restarting' }, { 'retry-after': '0' }),
      cut(['r4']),
      complete(['r5', 'r6']),
    ]);
    const out = join(dir, 'events.ndjson');
    expect(await runExport(options(url, out), quiet, fastRetries())).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(['r1', 'r2', 'r3', 'r4', 'r5', 'r6'].map(record).join(''));
    expect(existsSync(`${out}.partial`)).toBe(false);
    expect(seen).toEqual([
      '/tenant/exports/events?format=ndjson',
      '/tenant/exports/events?format=ndjson',
      '/tenant/exports/events?format=ndjson&after=r3',
      '/tenant/exports/events?format=ndjson&after=r2',
      '/tenant/exports/events?format=ndjson&after=r2',
      '/tenant/exports/events?format=ndjson&after=r4',
    ]);
  });

  it('writes the CSV header once however often it resumes', async () => {
    const header = 'id,n\r\n';
    const csvCut: Step = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/csv' });
      res.write(`${header}a,1\r\n"b,""x""",2\r\n"c`);
      setImmediate(() => res.socket?.destroy());
    };
    const { url, seen } = await scripted([
      csvCut,
      (_req, res) => res.writeHead(200, { 'content-type': 'text/csv' }).end(`${header}"c\r\nd",3\r\n`),
    ]);
    const out = join(dir, 'events.csv');
    expect(
      await runExport(options(url, out, ['--since', '2025-01-01T00:00:00Z']), quiet, fastRetries()),
    ).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(`${header}a,1\r\n"b,""x""",2\r\n"c\r\nd",3\r\n`);
    expect(seen[1]).toBe(
      '/tenant/exports/events?format=csv&since=2025-01-01T00%3A00%3A00Z&after=b%2C%22x%22',
    );
  });

  it('gives up after its retries, keeping the complete records so far in FILE.partial, and exits 1', async () => {
    const { url } = await scripted([
      cut(['r1', 'r2']),
      ...Array.from({ length: 10 }, () => error(500, { message: 'boom' })),
    ]);
    const out = join(dir, 'failed.ndjson');
    const said: string[] = [];
    expect(await runExport(options(url, out), { write: (s: string) => said.push(s) }, fastRetries())).toBe(1);
    expect(readFileSync(`${out}.partial`, 'utf8')).toBe(record('r1') + record('r2'));
    expect(existsSync(out)).toBe(false);
    expect(said.join('')).toMatch(
      /export failed: 500: boom; the 2 complete records so far are in .*failed\.ndjson\.partial/,
    );
  });

  it('stops, saying so, when it cannot write its file', async () => {
    const { url } = await scripted([complete(['r1', 'r2'])]);
    const said: string[] = [];
    const out = join(dir, 'no-such-dir', 'x.ndjson');
    expect(await runExport(options(url, out), { write: (s: string) => said.push(s) }, fastRetries())).toBe(1);
    expect(said.join('')).toMatch(/export failed: cannot write .*x\.ndjson\.partial: ENOENT/);
  });

  it('stops at once on an answer retrying cannot change', async () => {
    const { url, seen } = await scripted([
      error(403, { error_code: 'INSUFFICIENT_SCOPE', message: 'needs admin' }),
    ]);
    const said: string[] = [];
    expect(
      await runExport(
        options(url, join(dir, 'x.ndjson')),
        { write: (s: string) => said.push(s) },
        fastRetries(),
      ),
    ).toBe(1);
    expect(seen).toHaveLength(1);
    expect(said.join('')).toMatch(/403 INSUFFICIENT_SCOPE: needs admin/);
  });
});
