import type { Logger } from 'pino';
import { createYielder } from '../../platform/cooperate';
import type { Queryable } from '../../platform/db';
import type { Mutex } from '../../platform/mutex';
import { OK, type Settlement, type StepResult } from '../../platform/pipeline';
import { applyConsentChoices, commitUnits } from '../../workflows';
import { applyMemberships } from '../accounts';
import { applyOrders } from '../commerce';
import {
  classifyAnonymousId,
  classifyIdentity,
  createGraphBatch,
  type GraphBatch,
  junkSetFromSettings,
} from '../identity';
import { markRescoring } from '../intelligence';
import { applyTraits, createProfileBatch, type ProfileBatch } from '../profiles';
import { markSegmentWork } from '../segments';
import type { SettingsStore, WorkspaceSettings } from '../workspaces';
import { loadSettings, settingsOf } from './batch-settings';
import type { ClaimedEvent } from './processing.repo';
import { guardOrder, markProcessed } from './processing.steps';
import { resolveStep } from './resolution.step';

/**
 * The path of a claimed batch of events, in one place. Each step lives in the module that owns the
 * data it touches and returns a typed result (platform/pipeline.ts): the events it settled
 * (dropped, dead-lettered, deferred) leave the batch, the rest go on. All of it runs in the claiming
 * transaction, so a batch's effects, its outbox facts and its processed marks commit together:
 * each event is applied exactly once.
 *
 *   claim               processing   oldest waiting events no other worker holds, off the backlog
 *   classify            identity     identifiers from raw values; junk values and merge cap per workspace
 *   guard order         processing   an older event of the same person held elsewhere: deferred
 *   resolve identities  identity     lock owners, suppression, the resolver's decision per event;
 *                                    a merge of a profile an earlier order event touched waits for the
 *                                    next batch (its order fact keeps its place), with its person's events
 *   apply traits        profiles     each event's merges, then its identify traits, in arrival order;
 *                                    newer wins, lineage; too big: dead letter
 *   write profiles      workflows    the two units of work and every effect of their merges (events,
 *                                    orders and spend follow the survivor, rescoring and segment
 *                                    marks), then their profile.created / profile.merged facts:
 *                                    commitUnits, the one home of a merge (src/workflows/merge.ts)
 *   apply consent       workflows    the choices an event carried recorded on its profile, newer wins; a
 *                                    denial cancels queued deliveries it takes back (workflows/consent.ts)
 *   apply orders        commerce     orders, products, spend; unusable payload: dead letter
 *   apply memberships   accounts     a `Group` event's profile a member of the account it names
 *   mark rescoring      intelligence the order events' profiles on the rescoring list, a score job queued
 *   mark segment work   segments     the events' profiles on the dirty list, a refresh queued
 *   mark processed      processing   deferred events back on the backlog, the rest marked; dead letters, drops
 *
 * New capabilities attach as a step here or as consumers of the outbox facts.
 */

export interface PipelineContext {
  log: Logger;
  /** The workspace settings accessor (junk identifiers, merge cap), read through the batch's transaction. */
  settings: SettingsStore;
  /**
   * Held from a batch's orders until its commit when several loops share a process: every order
   * upserts its products, and two batches locking the same product rows in different orders would
   * wait on (or deadlock with) each other. Released by the caller after COMMIT.
   */
  orderGate?: Mutex;
  /** Releases gathered while the batch ran, called by the caller after COMMIT or ROLLBACK. */
  held: Array<() => void>;
  /**
   * No other loop or process claims from this backlog (PGlite with one loop): every waiting event
   * older than the batch is in it, so the order guard has nothing to look for.
   */
  soleClaimer?: boolean;
}

/** One event on its way through the steps. */
export interface WorkItem {
  seq: number;
  event: ClaimedEvent;
  eventId: string;
  eventType: string;
  workspaceId: string;
  at: Date;
  payload: Record<string, unknown>;
  identity: ReturnType<typeof classifyIdentity>;
  anonymous: ReturnType<typeof classifyAnonymousId>;
  email: string | null;
  profileId: string | null;
  /** The merges this event caused, decided by resolution, carried out by the traits step in order. */
  merges?: Array<{ primary: string; secondary: string }>;
  /** The workspace's merge cap (settings), set by classify. */
  mergeCap?: number;
}

/** Everything the steps share for one batch. */
export interface BatchWork {
  tx: Queryable;
  ctx: PipelineContext;
  yieldNow: () => Promise<void>;
  /** Every claimed event, in seq order. */
  items: WorkItem[];
  /** Events a step took out of the batch, and why. */
  settled: Map<number, Settlement>;
  /** The batch's two units of work; a cut (resolveStep) starts them again for the events kept. */
  profiles: ProfileBatch;
  graph: GraphBatch;
  /** Milliseconds per step (logged with each batch at debug level). */
  timings: Record<string, number>;
  /** The settings of the workspaces seen in this batch, read once per batch (`settingsOf`). */
  settings: Map<string, WorkspaceSettings>;
}

export interface Step {
  name: string;
  run(work: BatchWork, live: WorkItem[]): Promise<StepResult>;
}

export const PIPELINE: readonly Step[] = [
  { name: 'classify', run: classify },
  { name: 'guard order', run: guardOrder },
  { name: 'resolve identities', run: resolveStep },
  { name: 'apply traits', run: (w, live) => applyTraits(w.tx, live, w.profiles, w.yieldNow) },
  // Before the orders: a profile's profile.created fact, written with the units, precedes the
  // order.completed of its first order (facts are read in seq order, and webhooks deliver a
  // profile's facts in that order).
  { name: 'write profiles', run: writeProfiles },
  // After the units: an event's choices are recorded on the profile it was applied to (the survivor).
  { name: 'apply consent', run: applyConsentStep },
  { name: 'apply orders', run: applyOrdersStep },
  {
    name: 'apply memberships',
    run: (w, live) =>
      applyMemberships(
        w.tx,
        live.map((i) => ({ ...i, eventName: i.event.event_name })),
      ),
  },
  // The merges' own marks were made with the units (commitUnits); these are the events'.
  { name: 'mark rescoring', run: (w, live) => markRescoring(w.tx, live) },
  { name: 'mark segment work', run: (w) => markSegmentWork(w.tx, { items: w.items, moves: new Map() }) },
];

/** What the batch came to; `retry` rolls the transaction back (another writer won a race). */
export type PipelineResult = { kind: 'done'; work: BatchWork } | { kind: 'retry'; reason: string };

export async function runPipeline(
  tx: Queryable,
  ctx: PipelineContext,
  claimed: readonly ClaimedEvent[],
): Promise<PipelineResult> {
  // With ROLE=all the HTTP server shares this thread: every few milliseconds of applying events,
  // requests that arrived meanwhile get their turn (a batch of wide writes is seconds of CPU).
  const yieldNow = createYielder();
  const work: BatchWork = {
    tx,
    ctx,
    yieldNow,
    items: claimed.map(toItem),
    settled: new Map(),
    profiles: createProfileBatch(yieldNow),
    graph: createGraphBatch(),
    timings: {},
    settings: new Map(),
  };
  for (const step of PIPELINE) {
    const live = work.items.filter((i) => !work.settled.has(i.seq));
    if (live.length === 0) break;
    const t0 = performance.now();
    const r = await step.run(work, live);
    work.timings[step.name] = performance.now() - t0;
    if (r.kind === 'retry') return r;
    for (const [seq, s] of r.settled ?? []) work.settled.set(seq, s);
  }
  const t0 = performance.now();
  await markProcessed(work);
  work.timings['mark processed'] = performance.now() - t0;
  return { kind: 'done', work };
}

const toItem = (e: ClaimedEvent): WorkItem => ({
  seq: e.seq,
  event: e,
  eventId: e.id,
  eventType: e.event_type,
  workspaceId: e.workspace_id,
  at: e.occurred_at,
  payload: e.payload ?? {},
  identity: null,
  anonymous: null,
  email: null,
  profileId: null,
});

async function classify(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  await loadSettings(
    w,
    live.map((i) => i.workspaceId),
  );
  for (const i of live) {
    const settings = settingsOf(w, i.workspaceId);
    const junk = junkSetFromSettings(settings);
    i.mergeCap = settings.merge_cap;
    i.identity = classifyIdentity(i.event.identity, junk);
    i.anonymous = classifyAnonymousId(i.event.anonymous_id, junk);
    i.email = i.identity?.type === 'email' ? i.identity.value : null;
  }
  return OK;
}

async function writeProfiles(w: BatchWork): Promise<StepResult> {
  if ((await commitUnits(w.tx, w.profiles, w.graph)) === 'stale') {
    return { kind: 'retry', reason: 'an identifier was linked by another writer meanwhile' };
  }
  for (const i of w.items) if (i.profileId) i.profileId = w.profiles.survivor(i.profileId)?.id ?? i.profileId;
  return OK;
}

async function applyConsentStep(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  // In seq order: two events of one profile in a batch are two choices (the workflow applies them
  // in the order given, all of them in a few statements).
  const inputs = live
    .filter((i) => i.event.consent !== null && i.profileId !== null)
    .map((i) => ({
      workspaceId: i.workspaceId,
      profileId: i.profileId!,
      choices: i.event.consent!,
      at: i.at,
      source: { type: 'event' as const, id: i.eventId },
    }));
  if (inputs.length === 0) return OK;
  await applyConsentChoices(w.tx, inputs, (id) => settingsOf(w, id).consent_default === 'granted');
  return OK;
}

async function applyOrdersStep(w: BatchWork, live: WorkItem[]): Promise<StepResult> {
  if (w.ctx.orderGate && live.some((i) => i.eventType === 'order')) {
    w.ctx.held.push(await w.ctx.orderGate.acquire());
  }
  return applyOrders(w.tx, live, w.ctx.log);
}
