import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { killAllChildren, type ServiceProcess, serviceEnv, startService } from './child';
import { dropSchema } from './harness';
import {
  identifyBatch,
  nestedAttributes,
  probeHealth,
  send,
  traitName,
  waitForProfile,
} from './stall-workload';

// Whole services in child processes, and big writes: allow for a busy 2-core machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

/**
 * No single profile write, event or batch may freeze the service (ROLE=all: API and worker in one
 * process). Each case runs its workload through the real HTTP server while /health is probed; the
 * bound is generous (the target, p99 ≤ 50 ms, is bench/stall.bench.ts's business): it catches a
 * return of the multi-second stalls that quadratic trait merges caused (18 s for one 20,000-key
 * profile write, 33 s for one batch of 90 identify events with 3,000 traits each).
 */
const WORST_HEALTH_MS = 1000;
const PG_URL = process.env.DATABASE_URL;

describe('big trait writes never freeze the service', () => {
  const env = serviceEnv({ ROLE: 'all' });
  const admin = env.CDP_INITIAL_ADMIN_KEY!;
  let svc: ServiceProcess;
  let base: string;

  beforeAll(async () => {
    svc = await startService(env);
    base = svc.url!;
  });
  afterAll(async () => {
    await svc?.stop();
    killAllChildren();
    if (PG_URL && env.DATABASE_SCHEMA) await dropSchema(PG_URL, env.DATABASE_SCHEMA);
  });

  /** Runs `work` while probing /health; asserts the slowest probe stayed under the bound. */
  async function whileProbing<T>(work: () => Promise<T>): Promise<T> {
    const probe = probeHealth(base);
    let out: T;
    try {
      out = await work();
    } finally {
      const samples = await probe.stop();
      expect(samples.length).toBeGreaterThan(0);
      expect(Math.max(...samples), `slowest /health of ${samples.length}`).toBeLessThan(WORST_HEALTH_MS);
    }
    return out;
  }

  it('refuses a profile write of 20,000 attribute keys with a 400 that names the limit', async () => {
    const body = JSON.stringify({ identity: 'crm-20k', attributes: nestedAttributes(100, 199, 1) });
    const res = await whileProbing(() => send(base, admin, 'POST', '/tenant/profiles', body));
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(400);
    expect(res.body.error_code).toBe('VALIDATION_ERROR');
    expect(res.body.details[0].path).toBe('/attributes');
    expect(res.body.details[0].message).toMatch(/1000 trait keys/);
  });

  it('grows a profile to 20,000 keys, 1,000 per write, then changes every one, answering /health throughout', async () => {
    // 20 groups of 999 keys: each write is 1,000 keys (the group counts), 19,980 leaves in all.
    const writes = (value: number) =>
      Array.from({ length: 20 }, (_, g) =>
        JSON.stringify({ identity: 'crm-grown', attributes: nestedAttributes(1, 999, value, g) }),
      );
    const first = writes(1);
    const second = writes(2);
    await whileProbing(async () => {
      for (const body of [...first, ...second]) {
        const res = await send(base, admin, 'POST', '/tenant/profiles', body);
        expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
      }
    });
    const profile = await waitForProfile(base, admin, 'crm-grown', () => true);
    const groups = Object.values(profile.attributes) as Array<Record<string, number>>;
    expect(groups).toHaveLength(20);
    const values = groups.flatMap((g) => Object.values(g));
    expect(values).toHaveLength(19_980);
    expect(values.every((v) => v === 2)).toBe(true);
  });

  it('refuses an identify batch with 3,000 traits per event, naming the limit and the event', async () => {
    const body = JSON.stringify(identifyBatch('too-many@example.com', 90, 3000));
    const res = await whileProbing(() => send(base, admin, 'POST', '/tenant/ingest/batch', body));
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(400);
    expect(res.body.details).toHaveLength(90);
    expect(res.body.details[3]).toEqual({
      path: '/3/payload',
      message: expect.stringMatching(/1000 trait keys/),
    });
  });

  it('applies 90 identify events of 1,000 traits for one person while /health keeps answering', async () => {
    const identity = 'ninety@example.com';
    const body = JSON.stringify(identifyBatch(identity, 90, 1000));
    const profile = await whileProbing(async () => {
      const res = await send(base, admin, 'POST', '/tenant/ingest/batch', body);
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(202);
      return waitForProfile(base, admin, identity, (p) => p.attributes[traitName(999)] === 89);
    });
    // The newest event wins every trait.
    expect(Object.keys(profile.attributes)).toHaveLength(1000);
    expect(Object.values(profile.attributes).every((v) => v === 89)).toBe(true);
  });
});
