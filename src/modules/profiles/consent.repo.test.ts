import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../platform/db';
import { openTestDb, type TestDb } from '../../platform/jobs/jobs.test-kit';
import { deleteConsent, moveConsent, readConsentRows, upsertConsent } from './consent.repo';

let t: TestDb;
let db: Db;
beforeAll(async () => {
  t = await openTestDb();
  db = t.db;
});
afterAll(() => t.close());

const ws = randomUUID();
const day = (d: number) => new Date(Date.UTC(2026, 0, d)).toISOString();

/** Records `category` for `profile` as granted or not on day `d`, from source `src`. */
const choice = (profile: string, category: string, granted: boolean, d: number, src: string) =>
  upsertConsent(db, [
    {
      workspace_id: ws,
      profile_id: profile,
      category,
      granted,
      occurred_at: day(d),
      source_type: 'event',
      source_id: src,
    },
  ]);

const stateOf = async (profile: string) =>
  Object.fromEntries(
    (await readConsentRows(db, ws, [profile])).map((r) => [r.category, `${r.granted} ${r.source_id}`]),
  );

describe('consent rows when profiles merge', () => {
  it('keep per category the newest choice of the survivor and every merged-away profile, as one pair at a time would', async () => {
    const [s, a, b] = [randomUUID(), randomUUID(), randomUUID()];
    await choice(s, 'ads', true, 5, 's');
    await choice(a, 'ads', false, 3, 'a'); // older than the survivor's: stays the survivor's
    await choice(b, 'ads', false, 7, 'b'); // newer: wins
    await choice(s, 'news', true, 5, 's');
    await choice(a, 'news', false, 5, 'a'); // a tie: the survivor's stays
    await choice(a, 'email', true, 4, 'a');
    await choice(b, 'email', false, 4, 'b'); // a tie between two merged-away: the earlier pair's wins
    await choice(b, 'sms', true, 1, 'b'); // the survivor has none: it moves
    await moveConsent(db, ws, [
      { from: a, to: s },
      { from: b, to: s },
    ]);
    expect(await stateOf(s)).toEqual({
      ads: 'false b',
      news: 'true s',
      email: 'true a',
      sms: 'true b',
    });
    expect(await readConsentRows(db, ws, [a, b])).toEqual([]);
  });

  it('move each pair to its own survivor, and touch no profile of another workspace', async () => {
    const [s1, s2, a, b] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await choice(a, 'ads', true, 2, 'a');
    await choice(b, 'ads', false, 2, 'b');
    await moveConsent(db, randomUUID(), [{ from: a, to: s1 }]);
    expect(await stateOf(a)).toEqual({ ads: 'true a' });
    await moveConsent(db, ws, [
      { from: a, to: s1 },
      { from: b, to: s2 },
    ]);
    expect([await stateOf(s1), await stateOf(s2)]).toEqual([{ ads: 'true a' }, { ads: 'false b' }]);
  });
});

describe('erasing consent rows', () => {
  it('removes at most the limit of the profiles’ rows at a time', async () => {
    const p = randomUUID();
    for (const c of ['a', 'b', 'c']) await choice(p, c, true, 1, 'x');
    expect(await deleteConsent(db, ws, [p, p], 2)).toBe(2);
    expect(await deleteConsent(db, ws, [p], 2)).toBe(1);
    expect(await readConsentRows(db, ws, [p])).toEqual([]);
  });
});
