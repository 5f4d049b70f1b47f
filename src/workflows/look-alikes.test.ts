import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../test/harness';
import { settle } from '../../test/settle';
import { liftSuppression, suppressionHash } from '../modules/identity';

/**
 * Identifiers that look the same are one identifier (docs/profiles.md, "Identifiers"): an address
 * written with a precomposed é or with e + combining accent, with a zero-width character in it, or
 * with the domain's trailing dot, is one identity for the pipeline, for POST /tenant/profiles, for
 * the lookups and for suppression. Runs on PGlite and, with DATABASE_URL, on PostgreSQL.
 */

const NFC = 'jos\u00e9@x.y';
const NFD = 'jose\u0301@x.y';
/** The two look-alikes, sent after both spellings were erased with suppression. */
const LOOK_ALIKES = ['jose\u0301\u200b@x.y', 'jos\u00e9@x.y.'];

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

async function ingest(
  ws: TestWorkspace,
  identity: string,
  payload: Record<string, unknown> = {},
): Promise<void> {
  const res = await svc.call('POST', '/api/ingest', {
    key: ws.adminKey,
    body: { identity, event_type: 'identify', event_name: 'Signed Up', payload },
  });
  expect(res.status, res.text).toBe(202);
}

const profilesOf = async (ws: TestWorkspace, query = '') =>
  (await svc.call('GET', `/tenant/profiles${query}`, { key: ws.adminKey })).body.data as Array<{
    id: string;
    email: string | null;
  }>;

const byIdentity = (ws: TestWorkspace, value: string) =>
  profilesOf(ws, `?identity=${encodeURIComponent(value)}`);

describe('look-alike identifiers', () => {
  it('after both spellings of josé@x.y are erased with suppression, neither look-alike creates a profile', async () => {
    const ws = await svc.newWorkspace('the issue’s sequence');
    await ingest(ws, NFC);
    await ingest(ws, NFD);
    await settle(svc.rt.deps.db);
    // Erase whatever each spelling names, with suppression (one profile: they are one identity).
    for (const form of [NFC, NFD]) {
      for (const p of await byIdentity(ws, form)) {
        const res = await svc.call('DELETE', `/tenant/profiles/${p.id}?suppress=true`, { key: ws.adminKey });
        expect(res.status, res.text).toBe(200);
      }
    }
    expect(await profilesOf(ws)).toEqual([]);

    for (const raw of LOOK_ALIKES) await ingest(ws, raw, { first_name: 'José' });
    await settle(svc.rt.deps.db);
    for (const raw of LOOK_ALIKES) {
      const res = await svc.call('POST', '/tenant/profiles', { key: ws.adminKey, body: { identity: raw } });
      expect(res.status, raw).toBe(409);
      const email = await svc.call('POST', '/tenant/profiles', { key: ws.adminKey, body: { email: raw } });
      expect(email.status, raw).toBe(409);
    }
    expect(await profilesOf(ws)).toEqual([]);
  });

  it('is one person whatever the spelling: the pipeline, the profile API and the lookups agree', async () => {
    const ws = await svc.newWorkspace('one person');
    await ingest(ws, NFD, { email: 'Jose\u0301@X.y.' });
    await ingest(ws, NFC);
    await ingest(ws, LOOK_ALIKES[0]!);
    await ingest(ws, LOOK_ALIKES[1]!);
    await settle(svc.rt.deps.db);
    const all = await profilesOf(ws);
    expect(all).toHaveLength(1);
    // The e-mail field set from a trait is in the identity's form.
    expect(all[0]!.email).toBe(NFC);
    for (const raw of [NFC, NFD, ...LOOK_ALIKES]) {
      expect((await byIdentity(ws, raw)).map((p) => p.id)).toEqual([all[0]!.id]);
      expect((await profilesOf(ws, `?email=${encodeURIComponent(raw)}`)).map((p) => p.id)).toEqual([
        all[0]!.id,
      ]);
    }
    // The API writes to the same profile, whichever spelling it is given.
    const res = await svc.call('POST', '/tenant/profiles', {
      key: ws.adminKey,
      body: { identity: LOOK_ALIKES[0], last_name: 'Pérez' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.id).toBe(all[0]!.id);
    const graph = await svc.call('GET', `/identity/graph/${all[0]!.id}`, { key: ws.adminKey });
    expect(graph.body.data.nodes.map((n: { value: string }) => n.value)).toEqual([NFC]);
  });

  it('still blocks an identifier an older version suppressed in another spelling, and lifts every spelling at once', async () => {
    const ws = await svc.newWorkspace('older suppressions');
    const db = svc.rt.deps.db;
    // What older versions stored when they erased the NFD spelling (or josé@x.y.) with suppression,
    // and a value with a zero-width space, as they classified it then.
    const older = [
      { type: 'email', value: NFD },
      { type: 'email', value: 'ana@x.y.' },
      { type: 'external_id', value: 'crm\u200b-7' },
    ] as const;
    for (const id of older) {
      await db.query('INSERT INTO identifier_suppressions (workspace_id, hash) VALUES ($1, $2)', [
        ws.id,
        suppressionHash(ws.id, id),
      ]);
    }
    await ingest(ws, NFC);
    await ingest(ws, 'ana@x.y');
    // The same raw value again: what an older version made of it is looked up too.
    await ingest(ws, 'crm\u200b-7');
    await settle(db);
    expect(await profilesOf(ws)).toEqual([]);
    const api = await svc.call('POST', '/tenant/profiles', { key: ws.adminKey, body: { identity: NFC } });
    expect(api.status).toBe(409);

    // Lifting the normal form lifts the older spellings with it.
    expect(await liftSuppression(db, ws.id, NFC)).toBe(true);
    expect(await liftSuppression(db, ws.id, 'crm\u200b-7')).toBe(true);
    const left = await db.query(
      'SELECT count(*)::int AS n FROM identifier_suppressions WHERE workspace_id = $1',
      [ws.id],
    );
    expect(left.rows[0]).toEqual({ n: 1 });
    const created = await svc.call('POST', '/tenant/profiles', {
      key: ws.adminKey,
      body: { identity: NFD, email: LOOK_ALIKES[1] },
    });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data.email).toBe(NFC);
  });
});
