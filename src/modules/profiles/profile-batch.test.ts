import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { createProfileBatch } from './profile-batch';
import { lockProfileHeads } from './profiles.repo';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const source = { type: 'api_key' as const, id: null };

async function seedProfile(): Promise<string> {
  const res = await svc.call('POST', '/tenant/profiles', {
    body: { email: `head-${Math.random()}@example.com`, first_name: 'Ada', attributes: { plan: 'pro' } },
  });
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

describe('a profile batch holding profiles by their heads (the worker’s lock)', () => {
  it('reads only the head: e-mail known, the other traits not yet', async () => {
    const id = await seedProfile();
    await svc.rt.deps.db.transaction(async (tx) => {
      const batch = createProfileBatch();
      const { rows } = await lockProfileHeads(tx, [id]);
      batch.addHeads(rows);
      const p = batch.survivor(id)!;
      expect(p.loaded).toBe(false);
      expect(p.traits.email).toMatch(/^head-.*@example\.com$/);
      expect(p.traits.first_name).toBeNull();
    });
  });

  it('refuses to change or merge a profile before its traits are read, so nothing is overwritten', async () => {
    const [a, b] = [await seedProfile(), await seedProfile()];
    await svc.rt.deps.db.transaction(async (tx) => {
      const batch = createProfileBatch();
      batch.addHeads((await lockProfileHeads(tx, [a, b])).rows);
      const [pa, pb] = [batch.survivor(a)!, batch.survivor(b)!];
      expect(() => batch.applyTraits(pa, { last_name: 'Byron' }, Date.now(), source, new Date())).toThrow(
        /before its traits were read/,
      );
      expect(() => batch.merge(pa, pb, source, new Date())).toThrow(/before its traits were read/);
    });
  });

  it('keeps every stored trait when a write follows loadTraits', async () => {
    const id = await seedProfile();
    await svc.rt.deps.db.transaction(async (tx) => {
      const batch = createProfileBatch();
      batch.addHeads((await lockProfileHeads(tx, [id])).rows);
      await batch.loadTraits(tx, [id]);
      const p = batch.survivor(id)!;
      expect(p.loaded).toBe(true);
      const r = batch.applyTraits(p, { last_name: 'Byron' }, Date.now(), source, new Date());
      expect(r.applied).toBe(true);
      await batch.flush(tx);
    });
    const res = await svc.call('GET', `/tenant/profiles/${id}`);
    expect(res.body.data).toMatchObject({
      first_name: 'Ada',
      last_name: 'Byron',
      attributes: { plan: 'pro' },
    });
  });
});
