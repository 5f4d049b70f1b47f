import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DIFF_LIMITS, REDACTED, redactSecrets, storedDiff } from './redact';

describe('redactSecrets', () => {
  it.each([
    'secret',
    'webhook_secret',
    'previous_secret',
    'token',
    'session_token',
    'refresh_token',
    'password',
    'passwd',
    'api_key',
    'apiKey',
    'writeKey',
    'Authorization',
    'cookie',
    'client_credentials',
    'private_key',
    'signature',
  ])('hides the value of a field named %s', (name) => {
    expect(redactSecrets({ [name]: 'hunter2', keep: 'me' })).toEqual({ [name]: REDACTED, keep: 'me' });
  });

  it.each([
    `cdp_sk_${'a'.repeat(43)}`,
    `cdp_pk_${'b'.repeat(43)}`,
    `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
  ])('hides a credential wherever it is: %s', (secret) => {
    expect(redactSecrets({ name: secret, list: [secret], nested: { deep: secret } })).toEqual({
      name: REDACTED,
      list: [REDACTED],
      nested: { deep: REDACTED },
    });
  });

  it('keeps what only looks alike: a key id, a short prefix, a null secret', () => {
    const v = { id: 'key_01hx', note: 'cdp_sk_', secret: null, keys: ['a'] };
    expect(redactSecrets(v)).toEqual(v);
  });

  it('never changes its input, and leaves no credential-looking string in any JSON value', () => {
    const secret = fc.constantFrom(`cdp_sk_${'z'.repeat(43)}`, `whsec_${'Q'.repeat(44)}`);
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.string(),
        secret,
        fc.integer(),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 8 }), tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const before = JSON.stringify(v);
        const out = JSON.stringify(redactSecrets(v));
        expect(JSON.stringify(v)).toBe(before);
        expect(out).not.toMatch(/cdp_sk_z|whsec_Q/);
      }),
    );
  });

  it('stops at the depth limit', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < DIFF_LIMITS.depth + 2; i++) deep = { d: deep };
    expect(JSON.stringify(redactSecrets(deep))).toContain('[nested]');
  });
});

describe('storedDiff', () => {
  it('keeps a small diff whole, redacted', () => {
    expect(storedDiff({ request: { body: { name: 'n', secret: 's' } } })).toEqual({
      request: { body: { name: 'n', secret: REDACTED } },
    });
  });

  it('replaces one over 16 KiB by the names of its fields and its size', () => {
    const big = { request: { body: { a: 'x'.repeat(DIFF_LIMITS.bytes), b: { c: 1 } } } };
    expect(storedDiff(big)).toEqual({
      truncated: true,
      bytes: expect.any(Number),
      fields: ['request.body.a', 'request.body.b'],
    });
  });
});
