import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app';
import type { App } from '../src/platform/http/types';
import { createLogger, describeError, redactDatabaseMessage } from '../src/platform/logger';
import { ENGINE, startTestService, type TestService } from './harness';
import { waitUntil } from './wait';

/**
 * What the logs say and what they never say: database errors without the row data they quote,
 * error lines that name their request, a client hanging up mid-body as an info line.
 */
type Line = Record<string, unknown>;

/** A logger writing into an array of parsed lines, exactly as createLogger formats them. */
function captureLogger(level = 'info') {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  return { log: createLogger(level, sink), lines };
}

const PII = ['Grace', 'Hopper', '123-45-6789', 'grace@example.com', '99999999999'];
const expectNoPii = (text: string) => {
  for (const value of PII) expect(text).not.toContain(value);
};

/** Waits for a log line saying `msg` among `lines` (logs are written a moment after the answer). */
const lineLogged = (lines: () => Line[], msg: string) =>
  waitUntil(() => lines().some((l) => l.msg === msg), { what: `the log line "${msg}"`, timeoutMs: 5000 });

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  await svc.rt.deps.db.query('CREATE TABLE log_probe (email text UNIQUE, n int NOT NULL)');
  await svc.rt.deps.db.query("INSERT INTO log_probe VALUES ('grace@example.com', 1)");
});
afterAll(async () => {
  await svc?.close();
});

/** The error the database raises for `sql`, with its driver's fields. */
async function dbError(sql: string, params: unknown[]): Promise<Error> {
  try {
    await svc.rt.deps.db.query(sql, params);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`expected ${sql} to fail`);
}

describe(`database errors in the logs (${ENGINE})`, () => {
  const cases: Array<[string, string, unknown[], string]> = [
    [
      'invalid JSON (values in where, detail and parameters)',
      'SELECT $1::jsonb',
      ['{"first_name":"Grace","last_name":"Hopper","ssn":"123-45-6789" oops'],
      '22P02',
    ],
    ['a value quoted in the message itself', 'SELECT $1::uuid', ['grace@example.com'], '22P02'],
    ['a number quoted in the message', 'SELECT $1::int', ['99999999999'], '22003'],
    [
      'a unique violation (the key in detail)',
      'INSERT INTO log_probe VALUES ($1, 2)',
      ['grace@example.com'],
      '23505',
    ],
  ];

  it.each(cases)('logs %s with its code and without the values', async (_what, sql, params, code) => {
    const err = await dbError(sql, params);
    const { log, lines } = captureLogger();
    log.error({ err }, 'event append failed');
    log.warn({ err: Object.assign(new Error('wrapped'), { cause: err }) }, 'wrapped');
    const text = JSON.stringify(lines);
    expectNoPii(text);
    const logged = lines[0]!.err as Line;
    expect(logged).toMatchObject({ type: 'DatabaseError', code, severity: 'ERROR' });
    expect(typeof logged.message).toBe('string');
    for (const field of ['detail', 'where', 'hint', 'params', 'query', 'internalQuery'])
      expect(logged).not.toHaveProperty(field);
    expect((lines[1]!.err as Line).cause).toMatchObject({ code });
  });

  it('describes an error as one line without the values, as the worker logs and keeps it', async () => {
    const err = await dbError('SELECT $1::uuid', ['grace@example.com']);
    expect(describeError(err)).toBe('DatabaseError: invalid input syntax for type uuid: "…"');
    expect(describeError(new TypeError('x is not a function'))).toBe('TypeError: x is not a function');
  });

  it('keeps the names of the schema objects involved', async () => {
    const err = await dbError('INSERT INTO log_probe VALUES ($1, 2)', ['grace@example.com']);
    const { log, lines } = captureLogger();
    log.error({ err }, 'failed');
    expect(lines[0]!.err).toMatchObject({
      code: '23505',
      table: 'log_probe',
      constraint: 'log_probe_email_key',
      message: 'duplicate key value violates unique constraint "log_probe_email_key"',
    });
  });

  it('removes quoted values from PostgreSQL messages but keeps quoted names', () => {
    expect(redactDatabaseMessage('invalid input syntax for type uuid: "grace@example.com"')).toBe(
      'invalid input syntax for type uuid: "…"',
    );
    expect(redactDatabaseMessage('value "99999999999" is out of range for type integer')).toBe(
      'value "…" is out of range for type integer',
    );
    expect(
      redactDatabaseMessage(
        'null value in column "email" of relation "profiles" violates not-null constraint',
      ),
    ).toBe('null value in column "email" of relation "profiles" violates not-null constraint');
    expect(redactDatabaseMessage('invalid byte sequence for encoding "UTF8": 0x47 0x72')).toBe(
      'invalid byte sequence for encoding "UTF8": …',
    );
  });
});

describe(`request log lines (${ENGINE})`, () => {
  let app: App;
  let port: number;
  const capture = captureLogger();
  /** Request bodies the server has started to read (past authentication, into the parser). */
  let bodiesRead = 0;

  beforeAll(async () => {
    app = await buildApp({ ...svc.rt.deps, log: capture.log });
    // A route whose query fails in the database with personal data in the error.
    app.post('/test/fails', { config: { auth: 'public' } }, async () => {
      await svc.rt.deps.db.query('SELECT $1::jsonb', ['{"first_name":"Grace","ssn":"123-45-6789" oops']);
      return { status: 'never' };
    });
    // A route whose storage is down, as every route is during an outage.
    app.get('/test/unavailable', { config: { auth: 'public' } }, async () => {
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
    });
    // Marks the moment a body starts to be read: a hang-up after it is one in the middle of a body.
    app.addHook('preParsing', async (_req, _reply, payload) => {
      bodiesRead++;
      return payload;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('names the request on an error line (reqId, method, path without the query) and leaks no data', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/test/fails?email=grace@example.com`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(500);
    await lineLogged(() => capture.lines, 'request failed');
    const line = capture.lines.find((l) => l.msg === 'request failed')!;
    expect(line.level).toBe(50);
    expect(typeof line.reqId).toBe('string');
    expect(line.reqId).not.toBe('');
    expect(line).toMatchObject({ method: 'POST', path: '/test/fails' });
    expect(line.err).toMatchObject({ type: 'DatabaseError', code: '22P02' });
    expectNoPii(JSON.stringify(line));
  });

  it('logs a 503 for unavailable storage as one warn line without a stack, not as an error', async () => {
    const before = capture.lines.length;
    const res = await fetch(`http://127.0.0.1:${port}/test/unavailable`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBeTruthy();
    await lineLogged(() => capture.lines.slice(before), 'request answered 503');
    const lines = capture.lines.slice(before);
    const line = lines.find((l) => l.msg === 'request answered 503')!;
    expect(line.level).toBe(40);
    expect(line).toMatchObject({ method: 'GET', path: '/test/unavailable' });
    expect(line.reqId).not.toBe('');
    expect(JSON.stringify(line)).not.toContain('stack');
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it.each([
    ['resets the connection', (s: net.Socket) => s.resetAndDestroy()],
    ['closes its side (FIN)', (s: net.Socket) => s.end()],
  ])(
    'logs a client that %s mid-body at info, without a stack, and nothing at error',
    async (_how, hangUp) => {
      const before = capture.lines.length;
      // The server's side of the connection, to know when it is closed.
      let serverSide: net.Socket | null = null;
      app.server.once('connection', (s: net.Socket) => {
        serverSide = s;
      });
      const reading = bodiesRead;
      const socket = net.connect(port, '127.0.0.1');
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write(
        `POST /api/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.ws.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 30000\r\n\r\n{"event_type":`,
      );
      // Mid-body: the server reads the body, which is still coming.
      await waitUntil(() => bodiesRead > reading, { what: 'the server to start reading the body' });
      hangUp(socket);
      await lineLogged(() => capture.lines.slice(before), 'connection closed mid-request');
      // Whatever else the hang-up makes the server log, it has logged once its side is closed.
      await waitUntil(() => serverSide?.destroyed, { what: "the server's side of the connection to close" });
      socket.destroy();
      const lines = capture.lines.slice(before);
      const line = lines.find((l) => l.msg === 'connection closed mid-request')!;
      expect(line.level).toBe(30);
      expect(line).toMatchObject({ method: 'POST', path: '/api/ingest' });
      expect(JSON.stringify(line)).not.toContain('stack');
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    },
  );
});
