import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The header that carries a request's id, both ways (docs/api.md, "Request ids"). */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * What a caller's id may look like to be kept: 1 to 128 characters of letters, digits and `- _ . :`
 * (a UUID, a ULID, a hex trace id, `req_…`). Anything else (longer, spaces, quotes, control
 * characters) could break a log line or a header, and is replaced by a fresh id.
 */
export const REQUEST_ID_SHAPE = /^[A-Za-z0-9._:-]{1,128}$/;

const base32 = (n: number, width: number): string => n.toString(32).padStart(width, '0');

/** 40 random bits drawn once per process: what keeps two processes' ids apart. */
const PROCESS_TAG = base32(randomBytes(5).readUIntBE(0, 5), 8);
let sequence = 0;
let lastMs = -1;
let timePart = '';

/**
 * A fresh id: `req_`, the millisecond (10 characters), this process's random tag (8) and a counter
 * (8), all lower-case base 32: unique across processes, ordered by time. Built per request, so it
 * is cheap: the time part is formatted once per millisecond (a random id per request, as
 * platform/ids.ts makes for events, measured 2–3 times the cost of this one).
 */
export function newRequestId(now: number = Date.now()): string {
  if (now !== lastMs) {
    lastMs = now;
    timePart = base32(now, 10);
  }
  sequence = (sequence + 1) % 0x10000000000;
  return `req_${timePart}${PROCESS_TAG}${base32(sequence, 8)}`;
}

/**
 * Fastify's `genReqId`. A caller's `X-Request-Id` is kept only when the connection comes from a
 * proxy the service trusts (TRUST_PROXY, the addresses Fastify's `trustProxy` is given, matched the
 * same way) and the value is well formed; a client that talks to the service directly cannot choose
 * the id its request is logged and audited under.
 */
export function createRequestIdGenerator(trustProxy: string | null): (raw: IncomingMessage) => string {
  if (!trustProxy) return () => newRequestId();
  const trusted = proxyAddr.compile(trustProxy.split(',').map((a) => a.trim()));
  return (raw) => {
    const given = raw.headers[REQUEST_ID_HEADER];
    const peer = raw.socket?.remoteAddress;
    if (typeof given === 'string' && REQUEST_ID_SHAPE.test(given) && peer && trusted(peer, 0)) return given;
    return newRequestId();
  };
}

/**
 * The first hook of every request: the answer names the request, whatever it turns out to be (a
 * success, an error, a 404, a static file of the console, a health probe).
 */
export function echoRequestId(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
  void reply.header(REQUEST_ID_HEADER, req.id);
  done();
}
