import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { needs } from '../../../test/skips';
import { createRateLimits, DEFAULT_LIMITS, limitFor } from './rate-limit';

const keyId = () => `key_${randomBytes(6).toString('hex')}`;

describe('rate limits in memory', () => {
  it('counts requests one by one and refuses the one over the limit with a reset of at least 1 s', async () => {
    const limits = createRateLimits(null);
    const id = keyId();
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await limits.consume(id, 'standard', 1, 3);
      expect(d).toMatchObject({ allowed: true, limit: 3 });
      remaining.push(d.remaining);
    }
    expect(remaining).toEqual([2, 1, 0]);
    const refused = await limits.consume(id, 'standard', 1, 3);
    expect(refused).toMatchObject({ allowed: false, limit: 3, remaining: 0 });
    expect(refused.resetSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.resetSeconds).toBeLessThanOrEqual(60);
  });

  it('makes a batch of N events consume N points of the batch tier', async () => {
    const limits = createRateLimits(null);
    const id = keyId();
    expect(await limits.consume(id, 'batch', 250, 1000)).toMatchObject({ allowed: true, remaining: 750 });
    expect(await limits.consume(id, 'batch', 700, 1000)).toMatchObject({ allowed: true, remaining: 50 });
    expect((await limits.consume(id, 'batch', 51, 1000)).allowed).toBe(false);
  });

  it('keeps the tiers and the keys apart', async () => {
    const limits = createRateLimits(null);
    const [one, two] = [keyId(), keyId()];
    await limits.consume(one, 'batch', 10, 10);
    expect((await limits.consume(one, 'batch', 1, 10)).allowed).toBe(false);
    expect(await limits.consume(one, 'standard', 1, 10)).toMatchObject({ allowed: true, remaining: 9 });
    expect(await limits.consume(two, 'batch', 1, 10)).toMatchObject({ allowed: true, remaining: 9 });
  });
});

describe('limitFor', () => {
  it('reads the per-minute limits from workspace settings, else the contract defaults', () => {
    const settings = { rate_limits: { requests_per_minute: 10, batch_events_per_minute: 500 } };
    expect(limitFor(settings, 'standard')).toBe(10);
    expect(limitFor(settings, 'batch')).toBe(500);
    expect(limitFor({}, 'standard')).toBe(1000);
    expect(limitFor({}, 'batch')).toBe(10_000);
    expect(DEFAULT_LIMITS).toEqual({ standard: 1000, batch: 10_000 });
  });

  it.each([0, -5, 2.5, '100', null])('ignores a nonsensical setting %j', (bad) => {
    expect(limitFor({ rate_limits: { requests_per_minute: bad } }, 'standard')).toBe(1000);
  });
});

describe('rate limits with Redis unreachable', () => {
  it('keeps limiting in memory instead of failing requests', async () => {
    // Nothing listens on port 1; the client is never connected and has no offline queue.
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    down.on('error', () => {});
    try {
      const limits = createRateLimits(down, { keyPrefix: 'cdp:test-down:rl' });
      const id = keyId();
      expect(await limits.consume(id, 'standard', 1, 2)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await limits.consume(id, 'standard', 1, 2)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await limits.consume(id, 'standard', 1, 2)).allowed).toBe(false);
    } finally {
      down.disconnect();
    }
  });
});

const REDIS_URL = process.env.TEST_REDIS_URL;

needs('redis').describe('rate limits in Redis', () => {
  const prefix = `cdp:test-${randomBytes(6).toString('hex')}:rl`;
  const clients: Redis[] = [];
  const connect = async () => {
    const r = new Redis(REDIS_URL!, { lazyConnect: true, enableOfflineQueue: false });
    await r.connect();
    clients.push(r);
    return r;
  };
  afterAll(async () => {
    const [r] = clients;
    if (r) {
      const keys = await r.keys(`${prefix}*`);
      if (keys.length > 0) await r.del(...keys);
    }
    for (const c of clients) c.disconnect();
  });

  it('shares one budget between two limiters on separate connections (two processes)', async () => {
    const one = createRateLimits(await connect(), { keyPrefix: prefix });
    const two = createRateLimits(await connect(), { keyPrefix: prefix });
    const id = keyId();
    expect(await one.consume(id, 'batch', 6, 10)).toMatchObject({ allowed: true, remaining: 4 });
    expect(await two.consume(id, 'batch', 4, 10)).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await one.consume(id, 'batch', 1, 10);
    expect(refused.allowed).toBe(false);
    expect(refused.resetSeconds).toBeGreaterThanOrEqual(1);
    expect(await clients[0]!.keys(`${prefix}:batch:10:${id}`)).toHaveLength(1);
  });
});
