import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService, type TestWorkspace } from '../../../test/harness';
import { createLogger } from '../../platform/logger';
import { createMutex } from '../../platform/mutex';
import { countBacklog } from './processing.repo';
import { processBatch } from './processing.service';

/**
 * "Events of one person are applied in arrival order" (docs/profiles.md), however they fall into
 * batches: inside one batch, an event's merge and an earlier event's traits land in the order the
 * events arrived, exactly as when each event is a batch of its own. So the same events give the same
 * profiles whatever batches the worker cuts them into.
 */
let svc: TestService;
beforeAll(async () => {
  // ROLE=api: no worker of the service's own; the tests cut the backlog into batches themselves.
  svc = await startTestService({ ROLE: 'api' });
});
afterAll(async () => svc?.close());

const db = () => svc.rt.deps.db;
const ctx = () => ({ log: createLogger('silent'), settings: svc.rt.deps.settings, orderGate: createMutex() });

/** Applies every waiting event in batches of these sizes (the last size repeats). */
async function processIn(sizes: readonly number[]): Promise<void> {
  for (let k = 0; (await countBacklog(db())) > 0; k++) {
    await processBatch(db(), ctx(), sizes[Math.min(k, sizes.length - 1)]!);
  }
}

/** One POST of these events to the batch endpoint, then every waiting event applied in one batch. */
async function sendAsOneRequest(ws: TestWorkspace, events: readonly object[]): Promise<void> {
  const res = await svc.call('POST', '/tenant/ingest/batch', { key: ws.adminKey, body: events });
  expect(res.status, res.text).toBe(202);
  await processIn([1000]);
}

async function profileOf(ws: TestWorkspace, identifier: string) {
  const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(identifier)}`, {
    key: ws.adminKey,
  });
  expect(res.body.data, `${identifier} has one profile`).toHaveLength(1);
  return res.body.data[0];
}

describe('arrival order inside one batch', () => {
  /**
   * A phone profile on device D has tags ["vip"]. Ann signs up with tags "newsletter", then an event
   * names her and D together: D's profile merges into hers. The trait table says a scalar meeting an
   * array becomes `[E, ...I]`, so Ann's "newsletter" comes first, then the merged-in "vip".
   */
  async function annAfter(cut: 'one request' | 'two requests') {
    const ws = await svc.newWorkspace(`arrival order: ${cut}`);
    const device = randomUUID();
    await sendAsOneRequest(ws, [
      {
        event_type: 'identify',
        event_name: 'Phone sign-up',
        identity: '+14155552671',
        anonymous_id: device,
        payload: { tags: ['vip'] },
        timestamp: '2024-11-20T10:00:00Z',
      },
    ]);
    const signUp = {
      event_type: 'identify',
      event_name: 'Signed up',
      identity: 'ann@example.com',
      payload: { tags: 'newsletter' },
      timestamp: '2024-11-30T10:00:00Z',
    };
    const sameDevice = {
      event_type: 'track',
      event_name: 'Viewed',
      identity: 'ann@example.com',
      anonymous_id: device,
      timestamp: '2024-11-25T10:00:00Z',
    };
    if (cut === 'one request') await sendAsOneRequest(ws, [signUp, sameDevice]);
    else {
      await sendAsOneRequest(ws, [signUp]);
      await sendAsOneRequest(ws, [sameDevice]);
    }
    const ann = await profileOf(ws, 'ann@example.com');
    expect((await profileOf(ws, device)).id).toBe(ann.id);
    return ann.attributes.tags;
  }

  it('applies an earlier event’s trait append before a later event’s merge, as two requests would', async () => {
    expect(await annAfter('two requests')).toEqual(['newsletter', 'vip']);
    expect(await annAfter('one request')).toEqual(['newsletter', 'vip']);
  });

  /*
   * The property: a few people (two e-mails, a CRM id, two devices) send identify and track
   * events in any order, with traits that append (scalars and arrays) and that the newer write wins;
   * the profiles are the same when every event is its own batch, when all are one batch, and when
   * they are cut anywhere.
   */
  const IDENTITIES = ['a@example.com', 'b@example.com', 'crm-1'];
  const DEVICES = 2;
  // Weighted towards what makes order matter: devices alone (profiles to merge), identifies, appends.
  const eventArb = fc.record({
    type: fc.oneof(
      { arbitrary: fc.constant('identify'), weight: 3 },
      { arbitrary: fc.constant('track'), weight: 1 },
    ),
    identity: fc.option(fc.integer({ min: 0, max: IDENTITIES.length - 1 }), { nil: null, freq: 3 }),
    device: fc.option(fc.integer({ min: 0, max: DEVICES - 1 }), { nil: null, freq: 4 }),
    tag: fc.oneof(
      { arbitrary: fc.constant(null), weight: 1 },
      { arbitrary: fc.constantFrom('x', 'y', 'z'), weight: 2 },
      { arbitrary: fc.constantFrom(['v'], ['w']), weight: 2 },
    ),
    plan: fc.option(fc.constantFrom('free', 'pro'), { nil: null }),
    minute: fc.integer({ min: 0, max: 5 }),
  });
  type DrawnEvent = typeof eventArb extends fc.Arbitrary<infer T> ? T : never;
  const storyArb = fc.record({
    events: fc.array(eventArb, { minLength: 2, maxLength: 10 }),
    sizes: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
  });

  /** The events of a story, under identifiers of their own (`tag`), so each telling is a new population. */
  function eventsOf(events: ReadonlyArray<DrawnEvent>, tag: string) {
    return events.map((e, i) => {
      const payload: Record<string, unknown> = {};
      if (e.tag !== null) payload.tags = e.tag;
      if (e.plan !== null) payload.plan = e.plan;
      payload[`k${i}`] = i;
      return {
        event_type: e.type,
        event_name: `e${i}`,
        // Every event needs an identifier: a device when none was drawn.
        ...(e.identity !== null ? { identity: withTag(IDENTITIES[e.identity]!, tag) } : {}),
        ...(e.device !== null || e.identity === null ? { anonymous_id: deviceOf(e.device ?? 0, tag) } : {}),
        ...(e.type === 'identify' ? { payload } : {}),
        timestamp: new Date(Date.UTC(2024, 10, 1, 10, e.minute)).toISOString(),
      };
    });
  }
  const withTag = (id: string, tag: string) =>
    id.includes('@') ? id.replace('@', `+${tag}@`) : `${id}-${tag}`;
  const deviceOf = (d: number, tag: string) => `${tag}-0000-4000-8000-${String(d).padStart(12, '0')}`;

  /** The profiles as a person reads them, with the telling's tag taken out of every identifier. */
  async function profilesOf(ws: TestWorkspace, tag: string) {
    const seen = new Map<string, unknown>();
    const ids = [
      ...IDENTITIES.map((i) => withTag(i, tag)),
      ...Array.from({ length: DEVICES }, (_, d) => deviceOf(d, tag)),
    ];
    for (const id of ids) {
      const res = await svc.call('GET', `/tenant/profiles?identity=${encodeURIComponent(id)}`, {
        key: ws.adminKey,
      });
      for (const p of res.body.data) {
        const untag = (v: string | null) =>
          v
            ?.replace(`+${tag}@`, '@')
            .replace(new RegExp(`^(crm-\\d)-${tag}$`), '$1')
            .replace(new RegExp(`^${tag}-`), 'D-');
        seen.set(p.id, {
          identities: p.identities.map((x: { value: string }) => untag(x.value)).sort(),
          email: untag(p.email),
          attributes: p.attributes,
        });
      }
    }
    return [...seen.values()].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }

  it('gives the same profiles whatever batches the same events fall into (property)', async () => {
    const ws = await svc.newWorkspace('arrival order: any batches');
    // Each run reads every identifier's profile: far more requests a minute than a shop's default.
    const limits = { requests_per_minute: 1_000_000, batch_events_per_minute: 1_000_000 };
    const patched = await svc.call('PATCH', '/tenant/settings', {
      key: ws.adminKey,
      body: { rate_limits: limits },
    });
    expect(patched.status, patched.text).toBe(200);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(storyArb, async ({ events, sizes }) => {
        const told = async (batchSizes: number[]) => {
          const tag = `${String(run++).padStart(8, '0')}`;
          const res = await svc.call('POST', '/tenant/ingest/batch', {
            key: ws.adminKey,
            body: eventsOf(events, tag),
          });
          expect(res.status, res.text).toBe(202);
          await processIn(batchSizes);
          return profilesOf(ws, tag);
        };
        const oneByOne = await told([1]);
        expect(await told([1000]), 'all in one batch').toEqual(oneByOne);
        expect(await told(sizes), `in batches of ${sizes.join(', ')}`).toEqual(oneByOne);
      }),
      { numRuns: 60, endOnFailure: true },
    );
  }, 120_000);
});

describe('an order event before a merge of its profile, in one batch', () => {
  /**
   * A guest known from an earlier visit completes an order, Ann signs up, and an event names Ann and
   * the guest's device: the guest merges into Ann. One event at a time, the order is reported about
   * the guest, before the merge; so the merging event waits for the next batch, and the next one
   * applies it.
   */
  it('applies the other events in one pass, reports the order about the guest, then merges in the next batch', async () => {
    const ws = await svc.newWorkspace('an order before a merge');
    const device = randomUUID();
    await sendAsOneRequest(ws, [{ event_type: 'page', event_name: 'Home', anonymous_id: device }]);
    const res = await svc.call('POST', '/tenant/ingest/batch', {
      key: ws.adminKey,
      body: [
        {
          event_type: 'order',
          event_name: 'Order Completed',
          anonymous_id: device,
          payload: { order_id: 'o-1', status: 'completed', total: 5, currency: 'USD', items: [] },
        },
        { event_type: 'identify', event_name: 'Sign-up', identity: 'ann@example.com' },
        { event_type: 'page', event_name: 'Home', identity: 'ann@example.com', anonymous_id: device },
        // Another person's event after the merge: nothing to wait for.
        { event_type: 'identify', event_name: 'Sign-up', identity: 'bob@example.com' },
      ],
    });
    expect(res.status, res.text).toBe(202);
    // One pass each: a unit that lost its known identifiers would go stale and throw here.
    expect(await processBatch(db(), ctx(), 1000)).toMatchObject({ claimed: 4, applied: 3, deferred: 1 });
    expect(await processBatch(db(), ctx(), 1000)).toMatchObject({ claimed: 1, applied: 1, deferred: 0 });

    const { rows } = await db().query<{ type: string; subject: string }>(
      `SELECT type, COALESCE(data->>'profile_id', data->>'primary_profile_id') AS subject
         FROM outbox WHERE workspace_id = $1 ORDER BY seq`,
      [ws.id],
    );
    // Profiles named after the facts that created them: the guest's first, then Ann's and Bob's.
    const name = new Map([
      [rows[0]!.subject, 'guest'],
      [rows[1]!.subject, 'ann'],
      [rows[2]!.subject, 'bob'],
    ]);
    expect(rows.map((r) => `${r.type} ${name.get(r.subject) ?? r.subject}`)).toEqual([
      'profile.created guest',
      'profile.created ann',
      'profile.created bob',
      'order.completed guest',
      // Whichever survives (the merge rules decide), the merge comes after the order.
      expect.stringMatching(/^profile\.merged (guest|ann)$/),
    ]);
  });
});
