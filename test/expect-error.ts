import { Value } from 'typebox/value';
import { expect } from 'vitest';
import { ErrorEnvelopeSchema } from '../src/platform/http/envelope';
import type { Reply } from './harness';

/**
 * Asserts an error answer in the one envelope of docs/api.md, "Envelope": the status, the code, a JSON content
 * type, `{status:"error", error_code, message, timestamp, request_id}` (+ optional details), the
 * request id the same as the `X-Request-Id` header, and nothing else.
 */
export function expectError(
  res: Pick<Reply, 'status' | 'headers' | 'body' | 'text'>,
  status: number,
  code: string,
): void {
  expect({ status: res.status, code: res.body?.error_code }, res.text).toEqual({ status, code });
  expect(String(res.headers['content-type'])).toMatch(/^application\/json\b/);
  expect(Value.Check(ErrorEnvelopeSchema, res.body), res.text).toBe(true);
  expect(
    Object.keys(res.body).filter(
      (k) => !['status', 'error_code', 'message', 'timestamp', 'request_id', 'details'].includes(k),
    ),
  ).toEqual([]);
  expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  expect(res.body.message.length).toBeGreaterThan(0);
  // The envelope names the request as its header does.
  expect(res.body.request_id).toBe(res.headers['x-request-id']);
}

/** Asserts the request got past authentication and authorization (whatever else it then met). */
export function expectAuthorized(res: Pick<Reply, 'status' | 'text'>): void {
  expect([401, 403], `expected to pass auth, got ${res.status} ${res.text}`).not.toContain(res.status);
}
