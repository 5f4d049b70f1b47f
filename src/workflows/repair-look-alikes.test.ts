import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { settle } from '../../test/settle';
import { waitUntil } from '../../test/wait';
import { loadMigrations } from '../platform/db/migrate';
import { repairLookAlikeIdentifiers } from './repair';

/**
 * Databases written before identifiers were normalized hold look-alike spellings of one identifier,
 * on one profile or on two. The repair (queued by migration 0037) gives each its normal form, merges
 * the two profiles of one person through the merge workflow, and normalizes the e-mail fields; the
 * service runs it once by itself. Runs on PGlite and, with DATABASE_URL, on PostgreSQL.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;

async function ingest(ws: TestWorkspace, event: Record<string, unknown>): Promise<void> {
  const res = await svc.call('POST', '/api/ingest', {
    key: ws.adminKey,
    body: { event_type: 'identify', event_name: 'Signed Up', ...event },
  });
  expect(res.status, res.text).toBe(202);
}

const profiles = async (ws: TestWorkspace) =>
  (await svc.call('GET', '/tenant/profiles', { key: ws.adminKey })).body.data as Array<{
    id: string;
    email: string | null;
  }>;

const byIdentity = async (ws: TestWorkspace, value: string) =>
  (
    (await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(value)}`, { key: ws.adminKey }))
      .body.data as Array<{ id: string }>
  ).map((p) => p.id);

const nodesOf = async (profileId: string) =>
  (
    await db().query<{ type: string; value: string }>(
      'SELECT type, value FROM identity_nodes WHERE profile_id = $1 ORDER BY type, value',
      [profileId],
    )
  ).rows;

/** Rewrites a stored identifier (and the e-mail fields holding it) as an older version stored it. */
async function storeAsOlderVersion(ws: TestWorkspace, value: string, older: string): Promise<void> {
  await db().query(
    `UPDATE identity_nodes SET value = $3 WHERE workspace_id = $1 AND type = 'email' AND value = $2`,
    [ws.id, value, older],
  );
  await db().query('UPDATE profiles SET email = $3 WHERE workspace_id = $1 AND email = $2', [
    ws.id,
    value,
    older,
  ]);
}

/** Gives the profile a second node, as an older version could (another spelling of one identifier). */
async function addOlderNode(profileId: string, type: string, value: string): Promise<void> {
  await db().query(
    `INSERT INTO identity_nodes (id, workspace_id, type, value, profile_id, first_seen, last_seen)
     SELECT $2, workspace_id, $3, $4, id, now() - interval '1 day', now() - interval '1 day' FROM profiles WHERE id = $1`,
    [profileId, randomUUID(), type, value],
  );
}

/**
 * One workspace as an older version left it: josé@x.y on two profiles (NFC on the older, NFD on the
 * newer, which has an order), ana@x.y twice on one profile, b\u200bob@x.y alone, and zoë@x.y on two
 * profiles that each hold their own CRM id (the merge rules refuse those).
 */
async function olderWorkspace() {
  const ws = await svc.newWorkspace('look-alikes stored by an older version');
  const anon = randomUUID();
  await ingest(ws, { identity: 'jose-nfc@x.y', payload: { first_name: 'José' } });
  await ingest(ws, { identity: 'jose-nfd@x.y', anonymous_id: anon, payload: { plan: 'pro' } });
  await ingest(ws, {
    identity: 'jose-nfd@x.y',
    event_type: 'order',
    event_name: 'Order Completed',
    payload: { order_id: 'o-1', total: 30 },
  });
  await ingest(ws, { identity: 'ana@x.y', anonymous_id: randomUUID() });
  await ingest(ws, { identity: 'bob@x.y' });
  await ingest(ws, { identity: 'zoe-nfc@x.y' });
  await ingest(ws, { identity: 'crm-5' });
  await ingest(ws, { identity: 'zoe-nfd@x.y' });
  await ingest(ws, { identity: 'crm-6' });
  await settle(db());
  const [nfcId] = await byIdentity(ws, 'jose-nfc@x.y');
  const [nfdId] = await byIdentity(ws, 'jose-nfd@x.y');
  const [anaId] = await byIdentity(ws, 'ana@x.y');
  const [bobId] = await byIdentity(ws, 'bob@x.y');
  const [zoe5] = await byIdentity(ws, 'zoe-nfc@x.y');
  const [zoe6] = await byIdentity(ws, 'zoe-nfd@x.y');
  // Each CRM id on its Zoë, as an older version's manual merge could have left them.
  for (const [crm, zoe] of [
    ['crm-5', zoe5],
    ['crm-6', zoe6],
  ] as const) {
    const [crmProfile] = await byIdentity(ws, crm);
    const merged = await svc.call('POST', '/identity/merge', {
      key: ws.adminKey,
      body: { primary_profile_id: zoe, secondary_profile_ids: [crmProfile] },
    });
    expect(merged.status, merged.text).toBe(200);
  }
  await storeAsOlderVersion(ws, 'jose-nfc@x.y', 'jos\u00e9@x.y');
  await storeAsOlderVersion(ws, 'jose-nfd@x.y', 'jose\u0301@x.y');
  await addOlderNode(anaId!, 'email', 'ana@x.y.');
  // The evidence (anonymous id → ana@x.y.) must survive the fold.
  await db().query(
    `UPDATE identity_edges SET to_node = (SELECT id FROM identity_nodes WHERE profile_id = $1 AND value = 'ana@x.y.')
      WHERE to_node = (SELECT id FROM identity_nodes WHERE profile_id = $1 AND value = 'ana@x.y')`,
    [anaId],
  );
  await storeAsOlderVersion(ws, 'bob@x.y', 'b\u200bob@x.y');
  await storeAsOlderVersion(ws, 'zoe-nfc@x.y', 'zo\u00eb@x.y');
  await storeAsOlderVersion(ws, 'zoe-nfd@x.y', 'zoe\u0308@x.y');
  // The NFC profile is the older one: it survives.
  await db().query(`UPDATE profiles SET created_at = now() - interval '1 day' WHERE id = $1`, [nfcId]);
  return { ws, nfcId: nfcId!, nfdId: nfdId!, anaId: anaId!, bobId: bobId!, zoe5: zoe5!, zoe6: zoe6! };
}

describe('the repair of look-alike identifiers', () => {
  it('is queued by its migration where look-alikes are stored, and run by the service’s job runner', async () => {
    const migration = loadMigrations().find((m) => m.version === 37)!;
    const queued = () =>
      db().query<{ state: string }>(`SELECT state FROM jobs WHERE id = 'job_0037_normalize_identifiers'`);
    // Every stored value plain ASCII (nothing normalization can change): the migration queues nothing.
    await db().exec(migration.sql);
    expect((await queued()).rows).toEqual([]);

    const w = await olderWorkspace();
    await db().exec(migration.sql);
    expect((await queued()).rows).toHaveLength(1);
    await waitUntil(async () => (await queued()).rows[0]?.state === 'succeeded', {
      what: 'the repair job to succeed',
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    expect(await byIdentity(w.ws, 'jose\u0301@x.y')).toEqual([w.nfcId]);
    expect(await byIdentity(w.ws, 'b\u200bob@x.y')).toEqual([w.bobId]);
  });
  it('renames, folds and merges them into one normal form, normalizes e-mail fields, and finds nothing the second time', async () => {
    const w = await olderWorkspace();
    // As an older version left it: two profiles for josé, the NFD one found by no spelling.
    expect(await byIdentity(w.ws, 'jose\u0301@x.y')).toEqual([w.nfcId]);
    expect(await profiles(w.ws)).toHaveLength(6);

    const report = await repairLookAlikeIdentifiers(db());
    expect(report).toMatchObject({ renamed: 1, folded: 1, merged: 1, dropped: 1, unusable: 0 });
    expect(report.emails).toBeGreaterThanOrEqual(2);
    await settle(db());

    // josé: one profile, the older one, with the newer one's traits, order and anonymous id.
    const jose = await svc.call('GET', `/tenant/profiles/${w.nfcId}`, { key: w.ws.adminKey });
    expect(jose.body.data).toMatchObject({ id: w.nfcId, email: 'jos\u00e9@x.y', total_spend: 30 });
    expect(jose.body.data.attributes).toMatchObject({ plan: 'pro' });
    for (const spelling of ['jos\u00e9@x.y', 'jose\u0301@x.y', 'jose\u0301\u200b@x.y.'])
      expect(await byIdentity(w.ws, spelling)).toEqual([w.nfcId]);
    expect((await nodesOf(w.nfcId)).filter((n) => n.type === 'email')).toEqual([
      { type: 'email', value: 'jos\u00e9@x.y' },
    ]);
    const merged = await svc.call('GET', `/tenant/profiles/${w.nfdId}`, { key: w.ws.adminKey });
    expect(merged.body.data.id).toBe(w.nfcId);
    const fact = await db().query<{ data: { merged_profile_ids: string[] } }>(
      `SELECT data FROM outbox WHERE workspace_id = $1 AND type = 'profile.merged' AND data->>'primary_profile_id' = $2`,
      [w.ws.id, w.nfcId],
    );
    expect(fact.rows.map((r) => r.data.merged_profile_ids)).toEqual([[w.nfdId]]);

    // ana: one node, and the evidence kept on it.
    expect((await nodesOf(w.anaId)).filter((n) => n.type === 'email')).toEqual([
      { type: 'email', value: 'ana@x.y' },
    ]);
    const graph = await svc.call('GET', `/identity/graph/${w.anaId}`, { key: w.ws.adminKey });
    expect(graph.body.data.edges).toHaveLength(1);

    // bob: renamed, so new events with his address find him.
    expect(await byIdentity(w.ws, 'bob@x.y')).toEqual([w.bobId]);
    await ingest(w.ws, { identity: 'bob@x.y', event_type: 'track', event_name: 'Came Back' });
    await settle(db());
    expect(await byIdentity(w.ws, 'bob@x.y')).toEqual([w.bobId]);

    // zoë: the two profiles hold different CRM ids, so they stay two; the address is the older's.
    expect(await byIdentity(w.ws, 'zo\u00eb@x.y')).toEqual([w.zoe5]);
    expect(await byIdentity(w.ws, 'crm-6')).toEqual([w.zoe6]);
    expect((await profiles(w.ws)).map((p) => p.email).sort()).toEqual(
      ['ana@x.y', 'bob@x.y', 'jos\u00e9@x.y', 'zo\u00eb@x.y', 'zo\u00eb@x.y'].sort(),
    );

    expect(await repairLookAlikeIdentifiers(db())).toMatchObject({
      renamed: 0,
      folded: 0,
      merged: 0,
      dropped: 0,
      emails: 0,
    });
  });
});
