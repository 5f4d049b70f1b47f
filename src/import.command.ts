import { createReadStream, statSync } from 'node:fs';
import { UsageError } from './commands';
import { LIMITS } from './modules/ingest/ingest.schemas';
import {
  createProgress,
  createRetries,
  type Retries,
  readError,
  retryable,
  type ServiceTarget,
  send,
  serviceTarget,
  thousands,
} from './transfer';

/**
 * `cdp import FILE`: loads NDJSON events into a workspace through the one append path
 * (POST /tenant/ingest/batch), as a backfill from another tool or an events export of this service.
 * Batches stay within the endpoint's limits (1000 events, 4 MiB); a batch with an invalid item is
 * refused whole by the API, so the bad lines are set aside (their line numbers and reasons in the
 * summary) and the rest is sent again. Busy answers (429, 503) are waited out as Retry-After says.
 *
 * An export record imports as it is: `id`, `received_at` and `profile_id` are the service's own and
 * are dropped, and the original `id` becomes the `message_id` when there is none, so importing the
 * same file twice stores each event once.
 */

export const IMPORT_USAGE = 'usage: cdp import FILE [--url URL] [--key KEY]';

/** A line longer than this is refused without being parsed (an event's payload is at most 32 KiB). */
export const MAX_LINE_BYTES = 1024 * 1024;
/** Room left in a batch body for the brackets and commas, and a margin. */
const BATCH_BYTES = LIMITS.batchBodyBytes - 64 * 1024;
/** Rejections listed in the summary (all are counted). */
const LISTED_REJECTIONS = 1_000;

export interface ImportOptions {
  file: string;
  target: ServiceTarget;
}

export function parseImportOptions(
  positionals: string[],
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): ImportOptions {
  const [file, ...extra] = positionals;
  if (!file) throw new UsageError(IMPORT_USAGE);
  if (extra.length > 0) throw new UsageError(`import takes one file, got also "${extra[0]}"`);
  try {
    if (!statSync(file).isFile()) throw new UsageError(`${file} is not a file`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  return { file, target: serviceTarget({ url: str('url'), key: str('key') }, env) };
}

/** The service's own fields of an exported event, which an import does not send. */
const SERVICE_FIELDS = ['id', 'received_at', 'profile_id'];
/** Optional ingest fields a record may carry as null (an export writes absent values so). */
const NULLABLE = ['message_id', 'anonymous_id', 'identity', 'timestamp', 'payload'];

/**
 * An NDJSON record → the ingest event to send, or why the line cannot be one. What the API itself
 * checks (types, required fields, limits) is left to it: its answer names each problem.
 */
export function toIngestEvent(value: unknown): { event: Record<string, unknown> } | { reason: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      reason: `not a JSON object (${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value})`,
    };
  }
  const record = value as Record<string, unknown>;
  const event: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) {
    // `writeKey` would be taken as the request's credential: the import's key is --key.
    if (SERVICE_FIELDS.includes(k) || k === 'writeKey') continue;
    if (v === null && NULLABLE.includes(k)) continue;
    event[k] = v;
  }
  const id = record.id;
  if (event.message_id === undefined && (typeof id === 'string' || typeof id === 'number') && id !== '') {
    event.message_id = String(id);
  }
  return { event };
}

interface Item {
  line: number;
  json: string;
}

export interface ImportSummary {
  file: string;
  lines: number;
  blank_lines: number;
  events_accepted: number;
  lines_rejected: number;
  /** The first LISTED_REJECTIONS, by line number. */
  rejected: Array<{ line: number; reason: string }>;
  seconds: number;
}

class ImportFailed extends Error {}

/** Runs the import; prints the summary as JSON on stdout. Exit code: 0 all stored, 1 otherwise. */
export async function runImport(
  o: ImportOptions,
  io: {
    stdout: { write(s: string): unknown };
    stderr: { isTTY?: boolean; write(s: string): unknown };
  } = {
    stdout: process.stdout,
    stderr: process.stderr,
  },
  newRetries: () => Retries = () => createRetries(),
): Promise<number> {
  const t0 = performance.now();
  const total = statSync(o.file).size;
  const progress = createProgress('import', io.stderr);
  const summary: ImportSummary = {
    file: o.file,
    lines: 0,
    blank_lines: 0,
    events_accepted: 0,
    lines_rejected: 0,
    rejected: [],
    seconds: 0,
  };
  const reject = (line: number, reason: string) => {
    summary.lines_rejected++;
    if (summary.rejected.length < LISTED_REJECTIONS) summary.rejected.push({ line, reason });
  };
  let read = 0;
  const show = () => {
    const s = (performance.now() - t0) / 1000;
    progress.update({
      count: `${thousands(summary.lines)} lines`,
      rate: `${thousands(summary.events_accepted / Math.max(s, 0.001))} events/s`,
      fraction: total > 0 ? read / total : 1,
      extra: `${thousands(summary.events_accepted)} stored, ${thousands(summary.lines_rejected)} rejected`,
    });
  };

  /** Sends items until each is stored or rejected. */
  const sendBatch = async (items: Item[]): Promise<void> => {
    let pending = items;
    const retries = newRetries();
    while (pending.length > 0) {
      let res: Awaited<ReturnType<typeof send>>;
      try {
        res = await send(
          o.target,
          'POST',
          '/tenant/ingest/batch',
          `[${pending.map((i) => i.json).join(',')}]`,
        );
      } catch (err) {
        if (await retries.wait()) continue;
        throw new ImportFailed(`the service did not answer: ${(err as Error).message}`);
      }
      if (res.statusCode === 202) {
        res.resume();
        summary.events_accepted += pending.length;
        return;
      }
      const e = await readError(res);
      if (e.status === 400 && e.details.some((d) => /^\/\d+/.test(d.path))) {
        // The whole batch was refused for these items: set them aside, send the others again.
        const reasons = new Map<number, string[]>();
        for (const d of e.details) {
          const m = /^\/(\d+)(.*)$/.exec(d.path);
          if (!m) continue;
          const list = reasons.get(Number(m[1])) ?? [];
          list.push(m[2] ? `${m[2]}: ${d.message}` : d.message);
          reasons.set(Number(m[1]), list);
        }
        for (const [i, why] of reasons) if (pending[i]) reject(pending[i].line, why.join('; '));
        pending = pending.filter((_, i) => !reasons.has(i));
        continue;
      }
      if (e.status === 413 && pending.length > 1) {
        const half = Math.ceil(pending.length / 2);
        await sendBatch(pending.slice(0, half));
        await sendBatch(pending.slice(half));
        return;
      }
      if (e.status === 400 || e.status === 413) {
        // Refused as a whole without naming an item (one item alone too large): each line says so.
        for (const i of pending) reject(i.line, e.message);
        return;
      }
      if (retryable(e.status) && (await retries.wait(e.retryAfterMs))) continue;
      throw new ImportFailed(`${e.status}${e.error_code ? ` ${e.error_code}` : ''}: ${e.message}`);
    }
  };

  let batch: Item[] = [];
  let batchBytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const items = batch;
    batch = [];
    batchBytes = 0;
    await sendBatch(items);
    show();
  };
  const take = async (lineNo: number, bytes: Buffer | null) => {
    summary.lines++;
    if (bytes === null) {
      reject(lineNo, `longer than ${MAX_LINE_BYTES} bytes`);
      return;
    }
    let text: string;
    try {
      text = utf8.decode(bytes).trim();
    } catch {
      reject(lineNo, 'not UTF-8 text');
      return;
    }
    if (text === '') {
      summary.blank_lines++;
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      reject(lineNo, `not JSON: ${(err as Error).message}`);
      return;
    }
    const mapped = toIngestEvent(value);
    if ('reason' in mapped) {
      reject(lineNo, mapped.reason);
      return;
    }
    const json = JSON.stringify(mapped.event);
    const size = Buffer.byteLength(json) + 1;
    if (batch.length >= LIMITS.batchEvents || batchBytes + size > BATCH_BYTES) await flush();
    batch.push({ line: lineNo, json });
    batchBytes += size;
  };

  try {
    // Lines are split on the bytes, so a long line is measured (and refused) without being decoded.
    let parts: Buffer[] = [];
    let partBytes = 0;
    let tooLong = false;
    let lineNo = 0;
    for await (const chunk of createReadStream(o.file)) {
      const buf = chunk as Buffer;
      read += buf.length;
      let start = 0;
      for (let nl = buf.indexOf(10); nl !== -1; nl = buf.indexOf(10, start)) {
        const piece = buf.subarray(start, nl);
        start = nl + 1;
        lineNo++;
        const whole =
          tooLong || partBytes + piece.length > MAX_LINE_BYTES ? null : Buffer.concat([...parts, piece]);
        parts = [];
        partBytes = 0;
        tooLong = false;
        await take(lineNo, whole);
      }
      const rest = buf.subarray(start);
      if (rest.length > 0 && !tooLong) {
        if (partBytes + rest.length > MAX_LINE_BYTES) {
          tooLong = true;
          parts = [];
          partBytes = 0;
        } else {
          parts.push(Buffer.from(rest));
          partBytes += rest.length;
        }
      }
      show();
    }
    if (partBytes > 0 || tooLong) await take(++lineNo, tooLong ? null : Buffer.concat(parts));
    await flush();
  } catch (err) {
    if (!(err instanceof ImportFailed)) throw err;
    progress.clear();
    summary.seconds = Number(((performance.now() - t0) / 1000).toFixed(1));
    summary.rejected.sort((a, b) => a.line - b.line);
    io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    io.stderr.write(`cdp: import stopped at line ${summary.lines}: ${err.message}\n`);
    return 1;
  }
  progress.clear();
  summary.seconds = Number(((performance.now() - t0) / 1000).toFixed(1));
  summary.rejected.sort((a, b) => a.line - b.line);
  io.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  io.stderr.write(
    `imported ${thousands(summary.events_accepted)} events from ${o.file} in ${summary.seconds} s; ` +
      `${thousands(summary.lines_rejected)} lines rejected${summary.lines_rejected > 0 ? ' (listed in the summary)' : ''}\n`,
  );
  return summary.lines_rejected > 0 ? 1 : 0;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
