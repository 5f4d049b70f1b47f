import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, type Reply, startTestService, type TestService } from '../../../test/harness';
import { letTimePass } from '../../../test/wait';
import { insertTestEvents, waitProcessed } from '../processing/processing.test-kit';

/**
 * Merges under concurrency, through the HTTP API: parallel merges in random directions over a few
 * profiles, with reads of those profiles in flight, must never deadlock (5xx), never answer a false
 * 404 for an id that exists (merged-away ids answer their survivor), and must leave one survivor per
 * connected set with every identifier, event and order on it. PGlite runs one statement at a time,
 * so there it mostly checks the semantics; PostgreSQL checks the locking.
 */

let svc: TestService;
let key: string;
beforeAll(async () => {
  // Small batches: the two claiming loops (PostgreSQL) hold more, shorter transactions at once.
  svc = await startTestService({ WORKER_BATCH_SIZE: '4' });
  // Thousands of calls in a few seconds: lift the per-minute limit, then take a key that has never
  // been used (so no cached settings of before the update).
  await svc.rt.deps.db.query('UPDATE workspaces SET settings = $2::jsonb WHERE id = $1', [
    svc.ws.id,
    JSON.stringify({ rate_limits: { requests_per_minute: 1_000_000 } }),
  ]);
  key = await svc.ws.key(['admin']);
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;
const call = (method: string, url: string, body?: unknown): Promise<Reply> =>
  svc.call(method, url, body === undefined ? { key } : { key, body });

/** A small deterministic PRNG, so a failing round can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROFILES = 8;
const MERGES = 50;
const SUBROUTES = ['', '/events', '/lineage'];
const ROUNDS = ENGINE === 'postgres' ? 16 : 8;

/** Creates profiles each with an identifier, an identify event and an order (applied by the worker). */
async function seedProfiles(tag: string): Promise<{ ids: string[]; identities: string[] }> {
  const identities = Array.from({ length: PROFILES }, (_, i) => `${tag}-person-${i}`);
  const ids: string[] = [];
  for (const identity of identities) {
    const res = await call('POST', '/tenant/profiles', { identity });
    expect(res.status).toBe(200);
    ids.push(res.body.data.id);
  }
  await insertTestEvents(
    db(),
    svc.ws.id,
    identities.flatMap((identity, i) => [
      { identity, event_type: 'identify' as const, event_name: 'identify', payload: { [`k${i}`]: i } },
      {
        identity,
        event_type: 'order' as const,
        event_name: 'order',
        payload: { order_id: `${tag}-order-${i}`, total: 10 + i, items: [] },
      },
    ]),
  );
  await waitProcessed(db());
  return { ids, identities };
}

/** Union-find over the ids the merges connected. */
function components(ids: readonly string[], pairs: ReadonlyArray<[string, string]>): string[][] {
  const parent = new Map(ids.map((id) => [id, id]));
  const find = (x: string): string => {
    while (parent.get(x) !== x) x = parent.get(x)!;
    return x;
  };
  for (const [a, b] of pairs) parent.set(find(a), find(b));
  const sets = new Map<string, string[]>();
  for (const id of ids) sets.set(find(id), [...(sets.get(find(id)) ?? []), id]);
  return [...sets.values()];
}

/** One survivor per connected set, and every identifier, event, order and merged row points at it. */
async function expectConsistent(
  ids: readonly string[],
  identities: readonly string[],
  pairs: ReadonlyArray<[string, string]>,
  touched: ReadonlyMap<string, string[]> = new Map(),
): Promise<void> {
  for (const set of components(ids, pairs)) {
    const live = await db().query<{ id: string }>(
      'SELECT id FROM profiles WHERE id = ANY($1::uuid[]) AND merged_into IS NULL',
      [set],
    );
    expect(live.rows, `one survivor of ${set.length} merged profiles`).toHaveLength(1);
    const survivor = live.rows[0]!.id;
    const rows = await db().query<{ id: string; merged_into: string | null }>(
      'SELECT id, merged_into FROM profiles WHERE id = ANY($1::uuid[])',
      [set],
    );
    expect(rows.rows).toHaveLength(set.length);
    for (const r of rows.rows) expect(r.merged_into ?? r.id).toBe(survivor);
    const members = set.map((id) => identities[ids.indexOf(id)]!);
    const nodes = await db().query<{ profile_id: string }>(
      'SELECT profile_id FROM identity_nodes WHERE workspace_id = $1 AND value = ANY($2::text[])',
      [svc.ws.id, members],
    );
    expect(nodes.rows).toHaveLength(set.length);
    for (const n of nodes.rows) expect(n.profile_id).toBe(survivor);
    const events = await db().query<{ profile_id: string }>(
      `SELECT a.profile_id FROM events e JOIN event_profiles a ON a.seq = e.seq
        WHERE e.workspace_id = $1 AND e.identity = ANY($2::text[])`,
      [svc.ws.id, members],
    );
    expect(events.rows).toHaveLength(2 * set.length);
    for (const e of events.rows) expect(e.profile_id).toBe(survivor);
    // Their typed property rows (segment `where` tests read them, migration 0029) moved with them.
    const properties = await db().query<{ profile_id: string }>(
      `SELECT w.profile_id FROM events e JOIN event_properties w ON w.seq = e.seq
        WHERE e.workspace_id = $1 AND e.identity = ANY($2::text[])`,
      [svc.ws.id, members],
    );
    expect(properties.rows.length).toBeGreaterThanOrEqual(2 * set.length);
    for (const w of properties.rows) expect(w.profile_id).toBe(survivor);
    const orders = await db().query<{ profile_id: string }>(
      'SELECT o.profile_id FROM orders o WHERE o.workspace_id = $1 AND o.profile_id = ANY($2::uuid[])',
      [svc.ws.id, set],
    );
    expect(orders.rows).toHaveLength(set.length);
    for (const o of orders.rows) expect(o.profile_id).toBe(survivor);
    const spend = set.reduce((n, id) => n + 10 + ids.indexOf(id), 0);
    const survivorView = await call('GET', `/tenant/profiles/${survivor}`);
    expect(survivorView.body.data.total_spend).toBe(spend);
    // No update was lost: each landed on the survivor of its day, and merges carried it over.
    for (const id of set)
      for (const k of touched.get(id) ?? []) expect(survivorView.body.data.attributes).toHaveProperty(k);
    for (const id of set) {
      const res = await call('GET', `/tenant/profiles/${id}`);
      expect(res.status).toBe(200);
      expect(res.body.data.id).toBe(survivor);
    }
  }
}

describe('concurrent merges', () => {
  it(`${MERGES} parallel merges over ${PROFILES} profiles in random directions, ${ROUNDS} rounds: no 5xx, no false 404, one survivor per set`, async () => {
    const failures: string[] = [];
    const note = (what: string, res: Reply) => {
      if (res.status !== 200) failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    };
    for (let round = 0; round < ROUNDS; round++) {
      const random = prng(round + 1);
      const { ids, identities } = await seedProfiles(`merge-r${round}`);
      const pairs: Array<[string, string]> = [];
      const touched = new Map<string, string[]>();
      const pick = () => ids[Math.floor(random() * ids.length)]!;
      const calls: Array<Promise<void>> = [];
      for (let i = 0; i < MERGES; i++) {
        const primary = pick();
        let secondary = pick();
        while (secondary === primary) secondary = pick();
        pairs.push([primary, secondary]);
        calls.push(
          call('POST', '/identity/merge', {
            primary_profile_id: primary,
            secondary_profile_ids: [secondary],
          }).then((res) => {
            note('merge', res);
            if (res.status === 200) {
              const survivor = res.body.data.primary_profile_id;
              if (res.body.data.profile.id !== survivor) failures.push('merge answered another profile');
            }
          }),
        );
        // Reads of every profile, merged-away or not, race the merges.
        const id = pick();
        const sub = SUBROUTES[i % SUBROUTES.length];
        calls.push(
          call('GET', `/tenant/profiles/${id}${sub}`).then((res) => {
            note(`GET profile${sub}`, res);
            if (res.status === 200 && sub === '' && !ids.includes(res.body.data.id))
              failures.push('GET answered an unknown profile');
          }),
        );
        if (i % 5 === 0)
          calls.push(call('GET', `/identity/graph/${pick()}`).then((res) => note('GET graph', res)));
        // Updates by id (POST /tenant/profiles {id}) of profiles being merged follow them too.
        if (i % 4 === 0) {
          const target = pick();
          const k = `touch_${i}`;
          touched.set(target, [...(touched.get(target) ?? []), k]);
          calls.push(
            call('POST', '/tenant/profiles', { id: target, attributes: { [k]: i } }).then((res) => {
              note('update', res);
              if (res.status === 200 && !ids.includes(res.body.data.id))
                failures.push('update answered an unknown profile');
            }),
          );
        }
      }
      await Promise.all(calls);
      expect(failures, `round ${round}`).toEqual([]);
      await expectConsistent(ids, identities, pairs, touched);
    }
  });

  it('worker merges and API merges of the same profiles, at the same time, do not deadlock', async () => {
    const failures: string[] = [];
    const workerMerges = async () =>
      (
        await db().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM outbox WHERE type = 'profile.merged' AND data ? 'source_event_id'`,
        )
      ).rows[0]!.n;
    const before = await workerMerges();
    for (let round = 0; round < 4; round++) {
      const random = prng(1000 + round);
      const { ids } = await seedProfiles(`mixed-r${round}`);
      // Anonymous profiles: an event naming an identity with one of their anonymous ids makes the
      // worker merge them into the identity's profile, while the API merges the same profiles.
      const anons = ids.map((_, i) => `mixed-r${round}-anon-${i}`);
      await insertTestEvents(
        db(),
        svc.ws.id,
        anons.map((anonymous_id) => ({ anonymous_id, event_type: 'page' as const, event_name: 'home' })),
        // Readable anonymous ids (not UUIDs): the rows go in as the worker may meet them.
        { unchecked: true },
      );
      await waitProcessed(db());
      const anonIds = (
        await db().query<{ profile_id: string }>(
          `SELECT a.profile_id FROM events e JOIN event_profiles a ON a.seq = e.seq
            WHERE e.workspace_id = $1 AND e.anonymous_id = ANY($2::text[])
            ORDER BY e.seq`,
          [svc.ws.id, anons],
        )
      ).rows.map((r) => r.profile_id);
      const all = [...ids, ...anonIds];
      const pick = () => all[Math.floor(random() * all.length)]!;
      const inserting = (async () => {
        for (let i = 0; i < 24; i++) {
          await insertTestEvents(
            db(),
            svc.ws.id,
            [
              {
                anonymous_id: anons[Math.floor(random() * anons.length)]!,
                identity: `mixed-r${round}-person-${Math.floor(random() * PROFILES)}`,
                event_type: 'track',
                event_name: 'link',
              },
            ],
            { unchecked: true },
          );
          await letTimePass(2, 'spread the events among the merges and reads in flight');
        }
      })();
      const pairs: Array<[string, string]> = [];
      const api: Array<Promise<void>> = [];
      for (let i = 0; i < 30; i++) {
        const a = pick();
        let b = pick();
        while (b === a) b = pick();
        pairs.push([a, b]);
        api.push(
          call('POST', '/identity/merge', { primary_profile_id: a, secondary_profile_ids: [b] }).then(
            (res) => {
              if (res.status !== 200) failures.push(`merge: ${res.status} ${res.text.slice(0, 200)}`);
            },
          ),
        );
        api.push(
          call('GET', `/tenant/profiles/${pick()}`).then((res) => {
            if (res.status !== 200) failures.push(`GET: ${res.status} ${res.text.slice(0, 200)}`);
          }),
        );
      }
      await Promise.all([...api, inserting]);
      await waitProcessed(db());
      expect(failures, `round ${round}`).toEqual([]);
      expect((await db().query('SELECT reason FROM dead_letters')).rows).toEqual([]);
      // The worker may join more sets; what the API joined shares one survivor.
      for (const set of components(all, pairs)) {
        const seen = new Set<string>();
        for (const id of set) seen.add((await call('GET', `/tenant/profiles/${id}`)).body.data.id);
        expect(seen.size).toBe(1);
      }
      // Nothing points at a merged-away profile: merged rows (one hop), identifiers, events, orders.
      const stale = await db().query<{ n: number }>(
        `SELECT (SELECT count(*) FROM profiles m JOIN profiles p ON p.id = m.merged_into
                  WHERE p.merged_into IS NOT NULL)
              + (SELECT count(*) FROM identity_nodes n JOIN profiles p ON p.id = n.profile_id
                  WHERE p.merged_into IS NOT NULL)
              + (SELECT count(*) FROM event_profiles e JOIN profiles p ON p.id = e.profile_id
                  WHERE p.merged_into IS NOT NULL)
              + (SELECT count(*) FROM orders o JOIN profiles p ON p.id = o.profile_id
                  WHERE p.merged_into IS NOT NULL) AS n`,
      );
      expect(Number(stale.rows[0]!.n)).toBe(0);
    }
    // The worker did merge profiles while the API did (else this tested nothing).
    expect(await workerMerges()).toBeGreaterThan(before);
  });

  it('erasures racing merges leave nothing of the erased person behind, and never a 5xx', async () => {
    for (let round = 0; round < 4; round++) {
      const random = prng(2000 + round);
      const { ids } = await seedProfiles(`erase-r${round}`);
      const pick = () => ids[Math.floor(random() * ids.length)]!;
      const statuses: number[] = [];
      const calls: Array<Promise<unknown>> = [];
      for (let i = 0; i < 30; i++) {
        const a = pick();
        let b = pick();
        while (b === a) b = pick();
        calls.push(
          call('POST', '/identity/merge', { primary_profile_id: a, secondary_profile_ids: [b] }).then((r) =>
            statuses.push(r.status),
          ),
        );
        if (i === 10 || i === 20)
          calls.push(call('DELETE', `/tenant/profiles/${pick()}`).then((r) => statuses.push(r.status)));
      }
      await Promise.all(calls);
      // 404 is right for a merge naming a profile erased a moment before; 5xx never is.
      expect(statuses.filter((s) => s !== 200 && s !== 404)).toEqual([]);
      const erased = (
        await db().query<{ ids: string[] }>(
          'SELECT erased_profile_ids AS ids FROM profile_erasures WHERE profile_id = ANY($1::uuid[])',
          [ids],
        )
      ).rows.flatMap((r) => r.ids);
      expect(erased.length).toBeGreaterThan(0);
      // Every profile merged into an erased one went with it (none came back to life, empty, when
      // its survivor's row was deleted), and every remaining id still reads as a profile with data.
      const left = await db().query<{ id: string; merged_into: string | null }>(
        'SELECT id, merged_into FROM profiles WHERE id = ANY($1::uuid[])',
        [ids],
      );
      for (const r of left.rows) expect(erased).not.toContain(r.id);
      for (const id of ids) {
        const res = await call('GET', `/tenant/profiles/${id}`);
        if (erased.includes(id)) expect(res.status).toBe(404);
        else {
          expect(res.status).toBe(200);
          expect(res.body.data.identities.length).toBeGreaterThan(0);
        }
      }
    }
  });
});
