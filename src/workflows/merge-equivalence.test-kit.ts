import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { waitUntil } from '../../test/wait';
import { countBacklog } from '../modules/processing';
import { insertTestEvents, type TestEvent } from '../modules/processing/processing.test-kit';
import { startProcessingLoop } from '../modules/processing/processing.worker';
import { patchSettings } from '../modules/workspaces/settings.service';
import type { Db } from '../platform/db';
import { createLogger } from '../platform/logger';

/**
 * The equality proof's parts (merge-equivalence.property.test.ts, test/two-workers.equivalence.test.ts):
 * a generator of small shop stories (people sharing devices, identifies that merge or are refused,
 * orders with items re-sent and changing status, Group calls, late events, junk identifiers), an
 * in-memory model of what docs/profiles.md and docs/commerce.md say they come to, the two ways of
 * applying them (one event per batch with one loop, the reference; any loops and batch sizes while
 * the events are still being written), and a snapshot of everything the pipeline wrote for a
 * workspace with every random id replaced by a name both runs share, so two workspaces fed the same
 * events compare with one `toEqual`.
 */

// ---------------------------------------------------------------------------------------------
// The stories

export const PEOPLE = 3;
export const DEVICES = 3;
export const ORDER_IDS = ['o1', 'o2', 'o3'] as const;
export const GROUPS = ['acme', 'globex'] as const;
/** The workspace's own junk list (settings.junk_identifiers), beside the built-in one. */
export const WORKSPACE_JUNK = ['kiosk@shop.example', 'eeeeeeee-0000-4000-8000-00000000000e'];
const JUNK_IDENTITIES = ['guest', 'Kiosk@Shop.example'] as const;
/** The door takes only UUIDs as anonymous ids: the nil UUID (built-in junk) and the kiosk's (listed). */
const JUNK_ANONYMOUS = [
  '00000000-0000-0000-0000-000000000000',
  'EEEEEEEE-0000-4000-8000-00000000000E',
] as const;

export const emailOf = (p: number) => `person${p}@example.com`;
export const crmOf = (p: number) => `CRM-${p}`;
export const deviceOf = (d: number) => `dddddddd-0000-4000-8000-${String(d).padStart(12, '0')}`;

export type Identity = { person: number; kind: 'email' | 'crm' } | { junk: number };
export type Anonymous = { device: number } | { junk: number };

export interface Item {
  product_id: string;
  name: string;
  price: number;
  quantity: number;
  category?: string;
}

export type Traits = {
  plan?: string;
  tags?: string | readonly string[];
  prefs?: Record<string, boolean>;
  first_name?: string;
  email?: string;
};

export type Action =
  | { kind: 'page' }
  | { kind: 'view'; sku: string; price: number }
  | { kind: 'identify'; traits: Traits }
  | { kind: 'order'; orderId: string; status: string; total: number; items: Item[] }
  | { kind: 'group'; group: string };

export interface Step {
  identity: Identity | null;
  anonymous: Anonymous | null;
  action: Action;
  /** Seconds the event's time is behind its place in the stream (a late event; ties happen). */
  late: number;
}

export interface Story {
  steps: Step[];
  /** The workspace's merge cap (settings.merge_cap): small ones make the cap refuse merges. */
  mergeCap: number;
}

/** How the run under test applies the story. */
export interface Run {
  /** Claiming loops (the processing loop's `concurrency`). */
  loops: number;
  batchSize: number;
  /** Where the events are cut into appends made while the loops run. */
  cuts: number[];
}

const identityArb: fc.Arbitrary<Identity | null> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  {
    weight: 4,
    arbitrary: fc.record({ person: fc.nat(PEOPLE - 1), kind: fc.constant('email' as const) }),
  },
  { weight: 1, arbitrary: fc.record({ person: fc.nat(PEOPLE - 1), kind: fc.constant('crm' as const) }) },
  { weight: 1, arbitrary: fc.record({ junk: fc.nat(JUNK_IDENTITIES.length - 1) }) },
);
const anonymousArb: fc.Arbitrary<Anonymous | null> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 6, arbitrary: fc.record({ device: fc.nat(DEVICES - 1) }) },
  { weight: 1, arbitrary: fc.record({ junk: fc.nat(JUNK_ANONYMOUS.length - 1) }) },
);

const traitsArb: fc.Arbitrary<Traits> = fc.record(
  {
    plan: fc.constantFrom('free', 'pro', 'team'),
    // A scalar is appended to an array (or makes one of a scalar); an array replaces one if newer.
    tags: fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.constantFrom(['a'], ['b', 'c'])),
    prefs: fc.oneof(fc.record({ news: fc.boolean() }), fc.record({ sms: fc.boolean() })),
    first_name: fc.constantFrom('Ann', 'Bea'),
    email: fc.nat(PEOPLE - 1).map(emailOf),
  },
  { requiredKeys: [] },
);

const anyItemArb: fc.Arbitrary<Item> = fc.record(
  {
    product_id: fc.constantFrom('sku-a', 'sku-b'),
    name: fc.constantFrom('Mug', 'Big mug'),
    price: fc.constantFrom(5, 7.5),
    quantity: fc.constantFrom(1, 2),
    category: fc.constant('kitchen'),
  },
  { requiredKeys: ['product_id', 'name', 'price', 'quantity'] },
);
const itemArb = anyItemArb;

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'page' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('view' as const),
      sku: fc.constantFrom('sku-a', 'sku-b'),
      price: fc.constantFrom(5, 7.5),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('identify' as const), traits: traitsArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('order' as const),
      orderId: fc.constantFrom(...ORDER_IDS),
      status: fc.constantFrom('completed', 'completed', 'pending', 'refunded', 'cancelled'),
      total: fc.integer({ min: 1, max: 60 }),
      items: fc.array(itemArb, { maxLength: 2 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('group' as const), group: fc.constantFrom(...GROUPS) }),
  },
);

const stepArb: fc.Arbitrary<Step> = fc
  .record({
    identity: identityArb,
    anonymous: anonymousArb,
    action: actionArb,
    late: fc.oneof(
      { weight: 5, arbitrary: fc.constant(0) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) },
    ),
  })
  // The door refuses an event with neither field (a junk value is accepted: the worker dead-letters it).
  .filter((s) => s.identity !== null || s.anonymous !== null);

/**
 * A sign-in: the device browses anonymously, the person is known from elsewhere (a server-side
 * event), then an identify on the device names them: a merge, unless the rules refuse it. Random
 * steps alone merge in few stories; these make merges (and the merge cap) common.
 */
const signInArb: fc.Arbitrary<Step[]> = fc
  .record({
    device: fc.nat(DEVICES - 1),
    // Mostly the same person: a second device signing in is what a small merge cap refuses.
    person: fc.constantFrom(0, 0, 0, 1, 2),
    kind: fc.constantFrom('email' as const, 'email' as const, 'email' as const, 'crm' as const),
    actions: fc.tuple(actionArb, actionArb, actionArb),
  })
  .map(({ device, person, kind, actions: [a, b, c] }) => [
    { identity: null, anonymous: { device }, action: a, late: 0 },
    { identity: { person, kind }, anonymous: null, action: b, late: 0 },
    { identity: { person, kind }, anonymous: { device }, action: c, late: 0 },
  ]);

/** The same person signing in on a second device: a second merge into one profile (the merge cap's case). */
const secondDeviceArb: fc.Arbitrary<Step[]> = fc
  .record({ first: signInArb, device: fc.nat(DEVICES - 1), actions: fc.tuple(actionArb, actionArb) })
  .map(({ first, device, actions: [a, b] }) => [
    ...first,
    { identity: null, anonymous: { device }, action: a, late: 0 },
    { identity: first[2]!.identity, anonymous: { device }, action: b, late: 0 },
  ]);

export const storyArb = (maxSteps = 14): fc.Arbitrary<Story> =>
  fc.record({
    steps: fc
      .array(
        fc.oneof(
          { weight: 2, arbitrary: fc.array(stepArb, { minLength: 1, maxLength: 5 }) },
          { weight: 1, arbitrary: signInArb },
          { weight: 1, arbitrary: secondDeviceArb },
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((parts) => parts.flat().slice(0, maxSteps)),
    mergeCap: fc.oneof(
      { weight: 3, arbitrary: fc.constant(100) },
      { weight: 2, arbitrary: fc.constantFrom(1, 1, 2) },
    ),
  });

export const runArb = (maxSteps = 14): fc.Arbitrary<Run> =>
  fc.record({
    loops: fc.integer({ min: 1, max: 4 }),
    batchSize: fc.constantFrom(1, 2, 3, 5, 8, 250),
    cuts: fc.uniqueArray(fc.integer({ min: 1, max: maxSteps - 1 }), { maxLength: 4 }),
  });

// ---------------------------------------------------------------------------------------------
// The events

export const T0 = Date.parse('2024-03-01T10:00:00Z');
export const messageIdOf = (i: number) => `m${i}`;

function identityValue(i: Identity): string {
  if ('junk' in i) return JUNK_IDENTITIES[i.junk]!;
  return i.kind === 'email' ? emailOf(i.person) : crmOf(i.person);
}
function anonymousValue(a: Anonymous): string {
  return 'junk' in a ? JUNK_ANONYMOUS[a.junk]! : deviceOf(a.device);
}

export function eventsOf(story: Story): TestEvent[] {
  return story.steps.map((s, i) => {
    const e: TestEvent = {
      event_type: 'track',
      event_name: 'Viewed',
      message_id: messageIdOf(i),
      at: new Date(T0 + (i - s.late) * 1000).toISOString(),
    };
    if (s.identity) e.identity = identityValue(s.identity);
    if (s.anonymous) e.anonymous_id = anonymousValue(s.anonymous);
    const a = s.action;
    switch (a.kind) {
      case 'page':
        return { ...e, event_type: 'page', event_name: 'Home' };
      case 'view':
        return {
          ...e,
          event_name: 'Product Viewed',
          payload: { sku: a.sku, price: a.price, flags: { fast: true }, tags: ['x', 1] },
        };
      case 'identify':
        return { ...e, event_type: 'identify', event_name: 'Traits', payload: { ...a.traits } };
      case 'order':
        return {
          ...e,
          event_type: 'order',
          event_name: 'Order Completed',
          payload: { order_id: a.orderId, status: a.status, total: a.total, items: a.items },
        };
      case 'group':
        return { ...e, event_name: 'Group', payload: { group_id: a.group } };
      default:
        throw new Error(`no event for ${JSON.stringify(a satisfies never)}`);
    }
  });
}

/** Fresh workspace settings for a story: its merge cap, and the workspace's own junk list. */
export async function configureWorkspace(db: Db, workspaceId: string, story: Story): Promise<void> {
  await patchSettings(db, null, workspaceId, {
    merge_cap: story.mergeCap,
    junk_identifiers: WORKSPACE_JUNK,
  });
}

// ---------------------------------------------------------------------------------------------
// The model: docs/profiles.md ("Resolution and merges", "Trait merge rules") and docs/commerce.md,
// one event at a time in arrival order. A profile is named after the event that created it.

/** What the model says, in the shape `modelView` reads off a snapshot. */
export interface ModelView {
  /** Each event: the name of the (surviving) profile it ended on, or why it was set aside. */
  events: Record<string, string>;
  /** Every profile: `live` or the survivor it was merged into. */
  profiles: Record<string, string>;
  /** Every identifier (type:value): the live profile holding it. */
  identifiers: Record<string, string>;
  /** The `plan` trait of each live profile that has one (newer write wins, per docs/profiles.md). */
  plans: Record<string, string>;
  /** Each order: its profile, status and total. */
  orders: Record<string, { profile: string; status: string; total: number }>;
  /** Each live profile with orders: completed spend and completed order count. */
  spend: Record<string, { total: number; completed: number }>;
  /** `group|profile` for each account membership. */
  members: string[];
  /** The outbox facts, one line each, sorted. */
  facts: string[];
}

export interface ModelCounts {
  merges: number;
  refusedUnique: number;
  refusedNewProfile: number;
  refusedCap: number;
  deadLetters: number;
  statusChanges: number;
  memberships: number;
  /** Order events for an order that another profile holds at the time (a device not linked to it). */
  sharedOrders: number;
}

const idKey = (type: string, value: string) => `${type}:${value}`;
export const profileName = (messageId: string) => `P(${messageId})`;

interface MProfile {
  name: string;
  /** Non-anonymous identifiers by type (the unique-identifier rule reads these). */
  ids: Map<string, Set<string>>;
  mergedCount: number;
  mergedInto: string | null;
  plan: { value: string; at: number } | null;
}

function classify(s: Step): { identity: [string, string] | null; anonymous: [string, string] | null } {
  const identity =
    s.identity && !('junk' in s.identity)
      ? s.identity.kind === 'email'
        ? (['email', emailOf(s.identity.person)] as [string, string])
        : (['external_id', crmOf(s.identity.person)] as [string, string])
      : null;
  const anonymous =
    s.anonymous && !('junk' in s.anonymous)
      ? (['anonymous_id', deviceOf(s.anonymous.device)] as [string, string])
      : null;
  return { identity, anonymous };
}

export function model(story: Story): { view: ModelView; counts: ModelCounts } {
  const profiles = new Map<string, MProfile>();
  const owner = new Map<string, string>();
  const counts: ModelCounts = {
    merges: 0,
    refusedUnique: 0,
    refusedNewProfile: 0,
    refusedCap: 0,
    deadLetters: 0,
    statusChanges: 0,
    memberships: 0,
    sharedOrders: 0,
  };
  const survivor = (name: string): string => {
    let p = profiles.get(name)!;
    while (p.mergedInto) p = profiles.get(p.mergedInto)!;
    return p.name;
  };
  const placed = new Map<string, string>();
  const orders = new Map<
    string,
    { profile: string; status: string; total: number; statusAt: number; completedOnce: boolean; by: string }
  >();
  const members = new Map<string, string>();
  const facts: string[] = [];

  const create = (msg: string): MProfile => {
    const p: MProfile = {
      name: profileName(msg),
      ids: new Map(),
      mergedCount: 0,
      mergedInto: null,
      plan: null,
    };
    profiles.set(p.name, p);
    facts.push(`profile.created ${p.name} by ${msg}`);
    return p;
  };
  const attach = (p: MProfile, [type, value]: [string, string]) => {
    owner.set(idKey(type, value), p.name);
    if (type === 'anonymous_id') return;
    const set = p.ids.get(type) ?? new Set<string>();
    p.ids.set(type, set.add(value));
  };
  const conflicts = (a: MProfile, b: MProfile) => {
    for (const [type, values] of a.ids) {
      const other = b.ids.get(type);
      if (!other || other.size === 0 || values.size === 0) continue;
      if ([...values].some((v) => !other.has(v)) || [...other].some((v) => !values.has(v))) return true;
    }
    return false;
  };
  const writePlan = (p: MProfile, value: string, at: number) => {
    if (p.plan === null || at > p.plan.at) p.plan = { value, at };
  };
  const merge = (primary: MProfile, secondary: MProfile, msg: string) => {
    counts.merges++;
    for (const [k, v] of owner) if (v === secondary.name) owner.set(k, primary.name);
    for (const [type, values] of secondary.ids) {
      const set = primary.ids.get(type) ?? new Set<string>();
      for (const v of values) set.add(v);
      primary.ids.set(type, set);
    }
    primary.mergedCount += 1 + secondary.mergedCount;
    for (const p of profiles.values()) if (p.mergedInto === secondary.name) p.mergedInto = primary.name;
    secondary.mergedInto = primary.name;
    if (secondary.plan) writePlan(primary, secondary.plan.value, secondary.plan.at);
    for (const o of orders.values()) if (o.profile === secondary.name) o.profile = primary.name;
    facts.push(`profile.merged ${primary.name} <- [${secondary.name}] by ${msg}`);
  };

  story.steps.forEach((s, i) => {
    const msg = messageIdOf(i);
    const at = T0 + (i - s.late) * 1000;
    const { identity, anonymous } = classify(s);
    if (!identity && !anonymous) {
      counts.deadLetters++;
      placed.set(msg, 'dead letter: no usable identifier');
      return;
    }
    const io = identity ? owner.get(idKey(...identity)) : undefined;
    const ao = anonymous ? owner.get(idKey(...anonymous)) : undefined;
    let p: MProfile;
    if (io) {
      p = profiles.get(io)!;
      if (anonymous && !ao) attach(p, anonymous);
      else if (ao && ao !== io) {
        const other = profiles.get(ao)!;
        if (conflicts(p, other)) counts.refusedUnique++;
        else if (p.mergedCount + 1 + other.mergedCount > story.mergeCap) counts.refusedCap++;
        else merge(p, other, msg);
      }
    } else if (ao) {
      p = profiles.get(ao)!;
      if (identity) {
        const held = p.ids.get(identity[0]);
        if (held && held.size > 0 && !held.has(identity[1])) {
          // A shared device: the identity gets a profile of its own; the device stays where it is.
          counts.refusedNewProfile++;
          p = create(msg);
          attach(p, identity);
        } else attach(p, identity);
      }
    } else {
      p = create(msg);
      if (identity) attach(p, identity);
      if (anonymous) attach(p, anonymous);
    }
    placed.set(msg, p.name);

    const a = s.action;
    if (a.kind === 'identify' && a.traits.plan !== undefined) writePlan(p, a.traits.plan, at);
    if (a.kind === 'group') {
      counts.memberships++;
      members.set(`${a.group}|${p.name}`, '');
    }
    if (a.kind === 'order') {
      const o = orders.get(a.orderId);
      if (!o) {
        orders.set(a.orderId, {
          profile: p.name,
          status: a.status,
          total: a.total,
          statusAt: at,
          completedOnce: a.status === 'completed',
          by: msg,
        });
        if (a.status === 'completed') facts.push(`order.completed ${a.orderId} of ${p.name} by ${msg}`);
      } else {
        if (survivor(o.profile) !== p.name) counts.sharedOrders++;
        if (o.status !== a.status && at >= o.statusAt) {
          counts.statusChanges++;
          o.status = a.status;
          o.statusAt = at;
          if (a.status === 'completed' && !o.completedOnce) {
            o.completedOnce = true;
            // The fact carries the order as it was created, the creating event's id included.
            facts.push(`order.completed ${a.orderId} of ${o.profile} by ${o.by}`);
          }
        }
      }
    }
  });

  const view: ModelView = {
    events: {},
    profiles: {},
    identifiers: {},
    plans: {},
    orders: {},
    spend: {},
    members: [],
    facts: facts.sort(),
  };
  for (const [msg, where] of placed) view.events[msg] = where.startsWith('P(') ? survivor(where) : where;
  for (const p of profiles.values()) {
    view.profiles[p.name] = p.mergedInto ? survivor(p.name) : 'live';
    if (!p.mergedInto && p.plan) view.plans[p.name] = p.plan.value;
  }
  for (const [k, name] of owner) view.identifiers[k] = survivor(name);
  for (const [id, o] of orders) {
    const profile = survivor(o.profile);
    view.orders[id] = { profile, status: o.status, total: o.total };
    const s = view.spend[profile] ?? { total: 0, completed: 0 };
    if (o.status === 'completed') {
      s.total += o.total;
      s.completed++;
    }
    view.spend[profile] = s;
  }
  view.members = [
    ...new Set([...members.keys()].map((k) => k.replace(/\|(.*)$/, (_, n) => `|${survivor(n)}`))),
  ].sort();
  return { view, counts };
}

// ---------------------------------------------------------------------------------------------
// Applying the events

export interface Applied {
  /** Sizes of the batches the loops claimed (from their debug log). */
  batches: number[];
  /** Events deferred by the cross-worker order guard. */
  deferred: number;
}

/**
 * Applies the events through the processing loop (`startProcessingLoop`, the service's own):
 * `loops` claiming loops, batches of `batchSize`, the events appended in the pieces `cuts` makes
 * while the loops run, so batches start and end anywhere. Nothing else may be waiting.
 */
export async function applyThroughLoops(
  db: Db,
  workspaceId: string,
  events: readonly TestEvent[],
  run: Run,
): Promise<Applied> {
  const applied: Applied = { batches: [], deferred: 0 };
  const log = createLogger('debug', {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; claimed?: number; deferred?: number };
      if (entry.msg !== 'event batch' || !entry.claimed) return;
      applied.batches.push(entry.claimed);
      applied.deferred += entry.deferred ?? 0;
    },
  });
  const loop = await startProcessingLoop(db, log, {
    batchSize: run.batchSize,
    concurrency: run.loops,
    // Each append kicks the loops; idle ones need not poll the database hard meanwhile.
    minIdleMs: 1,
    maxIdleMs: 20,
  });
  try {
    const cuts = [0, ...run.cuts.filter((c) => c < events.length).sort((a, b) => a - b), events.length];
    for (let k = 1; k < cuts.length; k++) {
      await insertTestEvents(db, workspaceId, events.slice(cuts[k - 1], cuts[k]));
      loop.kick();
    }
    await waitDrained(db);
  } finally {
    await loop.stop();
  }
  return applied;
}

/** The reference: the same events applied one at a time, in arrival order, by one loop. */
export async function applyOneByOne(db: Db, workspaceId: string, events: readonly TestEvent[]) {
  await insertTestEvents(db, workspaceId, events);
  const loop = await startProcessingLoop(db, createLogger('silent'), {
    batchSize: 1,
    concurrency: 1,
    minIdleMs: 1,
    maxIdleMs: 5,
  });
  try {
    await waitDrained(db);
  } finally {
    await loop.stop();
  }
}

export async function waitDrained(db: Db, timeoutMs = 30_000): Promise<void> {
  let left = 0;
  await waitUntil(
    async () => {
      left = await countBacklog(db);
      return left === 0;
    },
    { what: 'every event to be processed', timeoutMs, intervalMs: 10, detail: () => `${left} waiting` },
  );
}

// ---------------------------------------------------------------------------------------------
// The snapshot

/**
 * Everything the pipeline wrote for one workspace, with profile ids replaced by the name of the
 * event that created the profile (`P(m3)`) and event ids by their message ids, so that two
 * workspaces fed the same events compare with `toEqual`. What legitimately depends on how events
 * were cut into batches is left out, and said where.
 */
export interface Snapshot {
  /** message id → the profile the event was applied to (event_profiles), with its copied columns. */
  events: Record<string, unknown>;
  /** message id → reason. */
  deadLetters: Record<string, string>;
  /** The rows segments read an event's payload by (event_properties), one line each, sorted. */
  properties: string[];
  /** Every profile, merged-away ones too; not `updated_at`, the wall clock of the last write. */
  profiles: Record<string, unknown>;
  /** type:value → owner and times. */
  identifiers: Record<string, unknown>;
  /** Graph edges: `from → to by event`, sorted. */
  edges: string[];
  /**
   * Each profile's lineage, sorted: rows a merge moved keep their place in the table's order, which
   * follows the order in which independent profiles (two loops, two people) happened to commit.
   */
  lineage: Record<string, unknown[]>;
  orders: Record<string, unknown>;
  /** Values and source; the field marks (time, seq of the mention) differ only by the log's seqs. */
  products: Record<string, unknown>;
  accounts: Record<string, unknown>;
  members: Record<string, unknown>;
  /**
   * Each profile's facts in outbox order (the order webhooks deliver a profile's facts in). The
   * profile a fact carries (profile.created / profile.merged: the profile as its transaction left
   * it; order.completed: the owner's e-mail and names) is what the profile was when its batch
   * committed, so only its id is kept.
   */
  facts: Record<string, string[]>;
  /** Profiles waiting for a segment refresh and for rescoring (the workflow's and steps' marks). */
  marks: { segments: string[]; rescoring: string[] };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const EVENT_ID = /evt_[0-9a-zA-Z]{26}/g;

function plain(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return String(v);
  return v;
}
function push<T>(lists: Record<string, T[]>, key: string, value: T): void {
  const list = lists[key] ?? [];
  list.push(value);
  lists[key] = list;
}
function row(r: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, plain(v)]));
}

export async function snapshot(
  db: Db,
  workspaceId: string,
  opts: { marks?: boolean } = {},
): Promise<Snapshot> {
  const q = async (sql: string) =>
    (await db.query<Record<string, unknown>>(sql, [workspaceId])).rows.map(row);
  // Read at once (nothing writes any more): on PostgreSQL each read takes a connection of its own.
  const [events, deadLetters, properties, profiles, nodes, edges, lineage, orders, products] =
    await Promise.all([
      q(`SELECT e.id, e.message_id, a.profile_id, a.occurred_at, a.event_type, a.event_name
           FROM events e LEFT JOIN event_profiles a ON a.seq = e.seq WHERE e.workspace_id = $1 ORDER BY e.seq`),
      q(`SELECT e.message_id, d.reason FROM dead_letters d JOIN events e ON e.seq = d.event_seq
          WHERE d.workspace_id = $1`),
      q(`SELECT e.message_id, p.profile_id, p.event_name, p.event_type, p.occurred_at, p.path, p.kind,
                p.num::text AS num, p.str, p.bool
           FROM event_properties p JOIN events e ON e.seq = p.seq WHERE p.workspace_id = $1`),
      q(`SELECT id, email, first_name, last_name, attributes, field_times, total_spend::text AS total_spend,
                completed_orders, completed_first_at, completed_last_at, merged_into, created_at
           FROM profiles WHERE workspace_id = $1`),
      q(
        `SELECT id, type, value, profile_id, first_seen, last_seen FROM identity_nodes WHERE workspace_id = $1`,
      ),
      q(`SELECT from_node, to_node, event_id FROM identity_edges WHERE workspace_id = $1`),
      q(`SELECT profile_id, path, old_value, new_value, source_type, source_id, merged_from, occurred_at
           FROM profile_lineage WHERE workspace_id = $1`),
      q(`SELECT order_id, profile_id, status, total::text AS total, currency, items, occurred_at, event_id,
                status_at, completed_at
           FROM orders WHERE workspace_id = $1`),
      q(`SELECT product_id, name, price::text AS price, currency, category, source
           FROM products WHERE workspace_id = $1`),
    ]);
  const [accounts, members, facts, segmentMarks, rescoringMarks] = await Promise.all([
    q(`SELECT group_id, traits, traits_at::text AS traits_at, first_seen_at, last_seen_at
         FROM accounts WHERE workspace_id = $1`),
    q(
      `SELECT group_id, profile_id, first_seen_at, last_seen_at FROM account_members WHERE workspace_id = $1`,
    ),
    q(`SELECT type, data FROM outbox WHERE workspace_id = $1 ORDER BY seq`),
    opts.marks === false ? [] : q('SELECT profile_id FROM segment_dirty_profiles WHERE workspace_id = $1'),
    opts.marks === false
      ? []
      : q('SELECT profile_id FROM intelligence_dirty_profiles WHERE workspace_id = $1'),
  ]);
  const messageOf = new Map(events.map((e) => [e.id as string, e.message_id as string]));
  const nameOf = new Map<string, string>();
  for (const f of facts) {
    const d = f.data as Record<string, unknown>;
    if (f.type !== 'profile.created') continue;
    const by = String(d.source_event_id);
    nameOf.set(String(d.profile_id), profileName(messageOf.get(by) ?? by));
  }

  const snap: Snapshot = {
    events: {},
    deadLetters: {},
    properties: properties.map((p) => JSON.stringify(p)).sort(),
    profiles: {},
    identifiers: {},
    edges: [],
    lineage: {},
    orders: {},
    products: {},
    accounts: {},
    members: {},
    facts: {},
    marks: {
      segments: segmentMarks.map((r) => r.profile_id as string),
      rescoring: rescoringMarks.map((r) => r.profile_id as string),
    },
  };
  for (const { id: _id, message_id, ...rest } of events) snap.events[message_id as string] = rest;
  for (const d of deadLetters) snap.deadLetters[d.message_id as string] = d.reason as string;
  for (const { id, ...rest } of profiles) snap.profiles[id as string] = rest;
  const nodeName = new Map(nodes.map((n) => [n.id as string, `${n.type}:${n.value}`]));
  for (const { id: _id, type, value, ...rest } of nodes) snap.identifiers[`${type}:${value}`] = rest;
  snap.edges = edges
    .map(
      (e) => `${nodeName.get(e.from_node as string)} → ${nodeName.get(e.to_node as string)} by ${e.event_id}`,
    )
    .sort();
  for (const { profile_id, ...rest } of lineage) push(snap.lineage, profile_id as string, rest);
  for (const { order_id, ...rest } of orders) snap.orders[order_id as string] = rest;
  for (const { product_id, ...rest } of products) snap.products[product_id as string] = rest;
  for (const { group_id, ...rest } of accounts) snap.accounts[group_id as string] = rest;
  for (const { group_id, profile_id, ...rest } of members) snap.members[`${group_id}|${profile_id}`] = rest;
  for (const f of facts) {
    const d = f.data as Record<string, unknown>;
    const subject = String(d.profile_id ?? d.primary_profile_id);
    let line: string;
    if (f.type === 'profile.created') line = `profile.created by ${d.source_event_id}`;
    else if (f.type === 'profile.merged')
      line = `profile.merged <- ${JSON.stringify(d.merged_profile_ids)} by ${d.source_event_id}`;
    else if (f.type === 'order.completed') {
      const { profile: _who, profile_id: _id, ...order } = d;
      line = `order.completed ${JSON.stringify(order)}`;
    } else line = `${f.type} ${JSON.stringify(d)}`;
    push(snap.facts, subject, line);
  }

  // Names for every id: profiles after the event that created them, events by their message ids.
  const named = JSON.stringify(snap)
    .replace(UUID, (id) => nameOf.get(id) ?? id)
    .replace(EVENT_ID, (id) => messageOf.get(id) ?? id);
  const out = JSON.parse(named) as Snapshot;
  out.marks.segments.sort();
  out.marks.rescoring.sort();
  for (const [profile, rows] of Object.entries(out.lineage))
    out.lineage[profile] = rows
      .map((r) => JSON.stringify(r))
      .sort()
      .map((r) => JSON.parse(r));
  return out;
}

/**
 * Where two snapshots differ, by part and key (`facts.<profile>`, `orders.<id>`, …), with both
 * values, for the failure message: fast-check's report cuts a deep diff down to `{…(13)}`.
 */
export function differences(got: Snapshot, want: Snapshot): string {
  const out: string[] = [];
  const show = (v: unknown) => JSON.stringify(v)?.slice(0, 1500);
  const differ = (at: string, g: unknown, w: unknown) => out.push(`${at}: got ${show(g)}, want ${show(w)}`);
  for (const part of Object.keys({ ...got, ...want }) as Array<keyof Snapshot>) {
    const [g, w] = [got[part], want[part]];
    if (isDeepStrictEqual(g, w)) continue;
    if (Array.isArray(g) || Array.isArray(w) || typeof g !== 'object' || typeof w !== 'object') {
      differ(String(part), g, w);
      continue;
    }
    const [go, wo] = [g as Record<string, unknown>, w as Record<string, unknown>];
    for (const k of Object.keys({ ...go, ...wo }))
      if (!isDeepStrictEqual(go[k], wo[k])) differ(`${String(part)}.${k}`, go[k], wo[k]);
  }
  return out.join('; ');
}

/** The snapshot read as the model's view, to hold the reference run to what the docs say. */
export function modelView(s: Snapshot): ModelView {
  const view: ModelView = {
    events: {},
    profiles: {},
    identifiers: {},
    plans: {},
    orders: {},
    spend: {},
    members: [],
    facts: [],
  };
  for (const [msg, e] of Object.entries(s.events)) {
    const profile = (e as { profile_id: string | null }).profile_id;
    const dead = s.deadLetters[msg];
    view.events[msg] = profile ?? `dead letter: ${dead?.split(':')[0]}`;
    if (profile !== null && dead !== undefined) view.events[msg] += ` (dead letter: ${dead})`;
  }
  for (const [name, p] of Object.entries(s.profiles) as Array<[string, Record<string, unknown>]>) {
    view.profiles[name] = (p.merged_into as string | null) ?? 'live';
    if (p.merged_into) continue;
    const attrs = p.attributes as Record<string, unknown>;
    if (attrs.plan !== undefined) view.plans[name] = attrs.plan as string;
    if (
      Number(p.completed_orders) > 0 ||
      Object.values(s.orders).some((o) => (o as { profile_id: string }).profile_id === name)
    )
      view.spend[name] = { total: Number(p.total_spend), completed: Number(p.completed_orders) };
  }
  for (const [k, n] of Object.entries(s.identifiers))
    view.identifiers[k] = (n as { profile_id: string }).profile_id;
  for (const [id, o] of Object.entries(s.orders) as Array<[string, Record<string, unknown>]>)
    view.orders[id] = { profile: o.profile_id as string, status: o.status as string, total: Number(o.total) };
  view.members = Object.keys(s.members).sort();
  for (const [subject, lines] of Object.entries(s.facts)) {
    for (const line of lines) {
      if (line.startsWith('profile.created'))
        view.facts.push(line.replace('profile.created', `profile.created ${subject}`));
      else if (line.startsWith('profile.merged')) {
        const m = /^profile\.merged <- (\[.*\]) by (.*)$/.exec(line)!;
        view.facts.push(
          `profile.merged ${subject} <- [${(JSON.parse(m[1]!) as string[]).join(', ')}] by ${m[2]}`,
        );
      } else if (line.startsWith('order.completed')) {
        const d = JSON.parse(line.slice('order.completed '.length)) as { order_id: string; event_id: string };
        view.facts.push(`order.completed ${d.order_id} of ${subject} by ${d.event_id}`);
      }
    }
  }
  view.facts.sort();
  return view;
}
