import { createWriteStream, renameSync } from 'node:fs';
import { UsageError } from './commands';
import {
  createProgress,
  createRetries,
  megabytes,
  type Retries,
  readError,
  retryable,
  type ServiceTarget,
  send,
  serviceTarget,
  thousands,
} from './transfer';
import { createRecordSplitter, firstField, type RecordFormat } from './transfer-records';

/**
 * `cdp export profiles|events|orders|segment-members … --out FILE`: a workspace export
 * (GET /tenant/exports/…) written to a file through a running service, with a progress line on
 * stderr. A connection that drops (or an answer that ends incomplete: docs/api.md "Workspace
 * exports") is resumed by itself with `after=<id of the last record written>`; only complete
 * records reach the file, so it never holds a duplicate, a gap or half a record. The file is
 * written as FILE.partial and renamed to FILE once complete.
 */

export const EXPORT_KINDS = ['profiles', 'events', 'orders', 'segment-members'] as const;
type Kind = (typeof EXPORT_KINDS)[number];

export interface ExportOptions {
  kind: Kind;
  segment: string | null;
  format: RecordFormat;
  since: string | null;
  until: string | null;
  /** Start after this record (the id of the last record of an earlier, partial file). */
  after: string | null;
  /** A file, or '-' for stdout. */
  out: string;
  target: ServiceTarget;
}

export const EXPORT_USAGE =
  'usage: cdp export profiles|events|orders|segment-members [--segment ID] [--format ndjson|csv] ' +
  '[--since T] [--until T] [--after ID] --out FILE|- [--url URL] [--key KEY]';

const isTime = (s: string) => /^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(Date.parse(s));

export function parseExportOptions(
  positionals: string[],
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): ExportOptions {
  const [kind, ...extra] = positionals;
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : null);
  if (!kind || !(EXPORT_KINDS as readonly string[]).includes(kind)) {
    throw new UsageError(kind ? `cannot export "${kind}": ${EXPORT_USAGE}` : EXPORT_USAGE);
  }
  if (extra.length > 0) throw new UsageError(`export takes one kind, got also "${extra[0]}"`);
  const segment = str('segment');
  if (kind === 'segment-members' && !segment)
    throw new UsageError('export segment-members needs --segment ID');
  if (kind !== 'segment-members' && segment) throw new UsageError('--segment goes with segment-members only');
  const out = str('out');
  if (!out) throw new UsageError(`export needs --out FILE (or --out - for stdout): ${EXPORT_USAGE}`);
  const format = str('format') ?? (out.toLowerCase().endsWith('.csv') ? 'csv' : 'ndjson');
  if (format !== 'ndjson' && format !== 'csv') throw new UsageError(`--format ${format}: use ndjson or csv`);
  for (const k of ['since', 'until']) {
    const t = str(k);
    if (t !== null && !isTime(t))
      throw new UsageError(`--${k} ${t}: use an ISO 8601 time, e.g. 2025-01-31T00:00:00Z`);
  }
  return {
    kind: kind as Kind,
    segment,
    format,
    since: str('since'),
    until: str('until'),
    after: str('after'),
    out,
    target: serviceTarget({ url: str('url') ?? undefined, key: str('key') ?? undefined }, env),
  };
}

/** Record ids remembered to step back over, should the last one be gone (erased) when resuming. */
const REMEMBERED_IDS = 1_000;

class ExportFailed extends Error {}

/** Runs the export; the exit code: 0 done, 1 failed (the message said why on stderr). */
export async function runExport(
  o: ExportOptions,
  stderr: { isTTY?: boolean; write(s: string): unknown } = process.stderr,
  retries: Retries = createRetries(),
): Promise<number> {
  const toStdout = o.out === '-';
  const partial = `${o.out}.partial`;
  const file: NodeJS.WritableStream = toStdout ? process.stdout : createWriteStream(partial);
  const progress = createProgress(`export ${o.kind}`, stderr);
  const t0 = performance.now();
  let rows = 0;
  let bytes = 0;
  let resumes = 0;
  let headerWritten = false;
  /** The ids of the last records written, oldest first; the last is where a resume starts. */
  const recent: string[] = o.after ? [o.after] : [];
  /** How many of `recent`'s newest ids the next resume steps back over (theirs were gone). */
  let stepBack = 0;

  // A full disk, or a reader of stdout that went away (`| head`): the export stops, saying so.
  let fileError: Error | null = null;
  file.on('error', (err: Error) => {
    fileError = err;
    file.emit('drain');
  });
  const write = async (text: string) => {
    if (fileError) fail(`cannot write ${toStdout ? 'stdout' : partial}: ${(fileError as Error).message}`);
    bytes += Buffer.byteLength(text);
    if (!file.write(text)) await new Promise<void>((resolve) => file.once('drain', () => resolve()));
  };
  const path = () => {
    const q = new URLSearchParams({ format: o.format });
    if (o.since) q.set('since', o.since);
    if (o.until) q.set('until', o.until);
    const after = recent[recent.length - 1 - stepBack];
    if (after !== undefined) q.set('after', after);
    const where =
      o.kind === 'segment-members' ? `segments/${encodeURIComponent(o.segment!)}/members` : o.kind;
    return `/tenant/exports/${where}?${q}`;
  };
  const fail = (message: string): never => {
    throw new ExportFailed(message);
  };

  try {
    for (;;) {
      let res: Awaited<ReturnType<typeof send>>;
      try {
        res = await send(o.target, 'GET', path());
      } catch (err) {
        if (!(await retries.wait())) fail(`the service did not answer: ${(err as Error).message}`);
        continue;
      }
      if (res.statusCode !== 200) {
        const e = await readError(res);
        if (e.status === 404 && e.details[0]?.path === '/after' && recent.length > 0) {
          // The record we stopped after is gone (erased, or left the segment): resume after the
          // one before it. Only gone records are stepped over, so nothing written comes twice.
          stepBack++;
          if (stepBack >= recent.length)
            fail(`cannot resume: the last ${recent.length} records written are gone`);
          continue;
        }
        if (retryable(e.status) && (await retries.wait(e.retryAfterMs))) continue;
        fail(`${e.status}${e.error_code ? ` ${e.error_code}` : ''}: ${e.message}`);
      }
      const split = createRecordSplitter(o.format);
      let headerSeen = o.format !== 'csv';
      let got = 0;
      let broke = false;
      res.setEncoding('utf8');
      try {
        for await (const chunk of res) {
          for (const record of split.push(chunk as string)) {
            if (!headerSeen) {
              headerSeen = true;
              if (!headerWritten) await write(record);
              headerWritten = true;
              continue;
            }
            const id = firstField(record, o.format);
            if (id === null) fail(`the service sent a record without an id: ${record.slice(0, 80)}`);
            if (stepBack > 0) {
              // The records stepped back over are gone: none of them comes again.
              recent.splice(recent.length - stepBack, stepBack);
              stepBack = 0;
            }
            await write(record);
            rows++;
            got++;
            recent.push(id!);
            if (recent.length > REMEMBERED_IDS) recent.shift();
            const s = (performance.now() - t0) / 1000;
            progress.update({
              count: `${thousands(rows)} rows`,
              rate: `${thousands(rows / Math.max(s, 0.001))} rows/s`,
              fraction: null,
              extra: megabytes(bytes),
            });
          }
        }
      } catch (err) {
        if (err instanceof ExportFailed) throw err;
        broke = true;
      }
      if (!broke && res.complete) break;
      // Dropped, or ended without its last chunk: go on after the last complete record.
      if (got > 0) retries.reset();
      resumes++;
      if (!(await retries.wait())) fail('the connection kept dropping');
    }
  } catch (err) {
    progress.clear();
    if (!toStdout && !fileError) await new Promise((resolve) => file.end(() => resolve(undefined)));
    const where = toStdout ? '' : `; the ${thousands(rows)} complete records so far are in ${partial}`;
    stderr.write(`cdp: export failed: ${(err as Error).message}${where}\n`);
    return 1;
  }
  progress.clear();
  if (!toStdout) {
    // end() reports a failed last write through 'error' (recorded above) before it calls back.
    await new Promise<void>((resolve) => file.end(() => resolve()).once('error', () => resolve()));
    if (fileError) {
      stderr.write(`cdp: export failed: cannot write ${partial}: ${(fileError as Error).message}\n`);
      return 1;
    }
    renameSync(partial, o.out);
  }
  const s = (performance.now() - t0) / 1000;
  stderr.write(
    `exported ${thousands(rows)} ${o.kind} to ${toStdout ? 'stdout' : o.out} (${megabytes(bytes)} in ${s.toFixed(1)} s, ` +
      `${thousands(rows / Math.max(s, 0.001))} rows/s${resumes > 0 ? `, resumed ${resumes}×` : ''})\n`,
  );
  return 0;
}
