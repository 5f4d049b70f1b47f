import type { Logger } from 'pino';
import { reassignOrders } from '../modules/commerce';
import {
  conflicts,
  createGraphBatch,
  deleteNode,
  findNodeById,
  findNodes,
  foldNode,
  type Identifier,
  MERGE_CAP,
  type NodeRef,
  normalizeEmail,
  normalizeStoredIdentifier,
  type OwnerView,
  renameNode,
  scanLookAlikeNodes,
} from '../modules/identity';
import { markRescoring } from '../modules/intelligence';
import {
  countMergedInto,
  createProfileBatch,
  listMergedAway,
  lockInto,
  scanLookAlikeEmails,
  setNormalizedEmails,
  withRetry,
} from '../modules/profiles';
import { markSegmentWork } from '../modules/segments';
import type { SettingsStore } from '../modules/workspaces';
import type { Db, Queryable } from '../platform/db';
import { isConflict } from '../platform/db';
import type { JobRunner } from '../platform/jobs';
import { commitUnits, type Moves, staleLink } from './merge';

/**
 * Repairs of data that older versions left wrong, run once as jobs (each queued by the migration
 * that shipped it), so that a start never waits for them and `cdp jobs` shows them.
 *
 * `repair.stranded-orders` (migrations/0028): before the merge workflow was one function, a merge
 * made by the event pipeline (a guest signing in) left the merged-away profile's orders on it, so
 * the survivor's total_spend, order list, segments and scores missed them. The repair walks every
 * merged-away profile in pages, moves its orders to its survivor, recomputes both order summaries
 * and marks both profiles for rescoring and segment refresh: what the merge itself does now. Each
 * page is one short transaction, so other work runs between pages; running it again finds nothing.
 */
export const REPAIR_QUEUE = 'repair.stranded-orders';

/** Merged-away profiles read per transaction. */
const PAGE = 1000;

export interface RepairReport {
  /** Orders moved to their profile's survivor. */
  orders: number;
  /** Merged-away profiles that still held orders. */
  profiles: number;
  /** Merged-away profiles looked at. */
  scanned: number;
}

export async function repairStrandedOrders(db: Db, signal?: AbortSignal): Promise<RepairReport> {
  const report: RepairReport = { orders: 0, profiles: 0, scanned: 0 };
  let after = 0;
  for (;;) {
    signal?.throwIfAborted();
    const page = await listMergedAway(db, after, PAGE);
    if (page.length === 0) return report;
    after = page.at(-1)!.seq;
    report.scanned += page.length;
    const byWorkspace = new Map<string, Array<{ from: string; to: string }>>();
    for (const p of page) {
      const list = byWorkspace.get(p.workspace_id) ?? [];
      list.push({ from: p.id, to: p.merged_into });
      byWorkspace.set(p.workspace_id, list);
    }
    await db.transaction(async (tx) => {
      const moved = new Map<string, Array<{ from: string; to: string }>>();
      for (const [ws, moves] of byWorkspace) {
        const r = await reassignOrders(tx, ws, moves);
        report.orders += r.moved;
        report.profiles += r.moves.length;
        if (r.moves.length > 0) moved.set(ws, r.moves);
      }
      const marks: Moves = moved;
      await markRescoring(tx, [], marks);
      await markSegmentWork(tx, { items: [], moves: marks });
    });
  }
}

/**
 * `repair.look-alike-identifiers` (migrations/0037): identifiers are normalized before they are
 * classified, matched and suppressed (Unicode NFC, format characters removed, an e-mail domain's
 * trailing dot dropped: modules/identity/identifiers.ts); older versions stored them without that,
 * so `josé@x.y` in NFC and in NFD could be two nodes of two profiles. The repair walks the nodes
 * (windows of ids; only values that are not plain ASCII or are e-mails ending in a dot can change)
 * and gives each its normal form:
 *
 * - nobody holds the normal form: the node is renamed to it;
 * - the same profile holds it: the look-alike node is folded into it (its edges kept);
 * - another profile holds it: one person had two profiles. They are merged through the merge
 *   workflow (`commitUnits`, as POST /identity/merge does; the older profile survives, the fact says
 *   no API key), then the node is folded. Where the merge workflow's own rules refuse (each holds
 *   another identifier of one type, or the merge cap), the identifier stays with the profile holding
 *   its normal form and the look-alike node goes: the next event with it goes there, as it would.
 *
 * Then the profiles' `email` fields get the same normal form. Each node is one short transaction
 * (locking at most the two profiles), retried when it loses a race; a run again finds nothing.
 */
export const LOOK_ALIKES_QUEUE = 'repair.look-alike-identifiers';

/** Nodes (or profiles) read per window: an index range, whatever the table holds. */
const WINDOW = 2000;

export interface LookAlikeReport {
  /** Nodes looked at (only candidates: not plain ASCII, or an e-mail ending in a dot). */
  candidates: number;
  /** Renamed to their normal form (nobody held it). */
  renamed: number;
  /** Folded into the node of their normal form on the same profile. */
  folded: number;
  /** Profiles merged into the one holding the same identifier. */
  merged: number;
  /** Look-alike nodes removed because the merge workflow refused to merge their two profiles. */
  dropped: number;
  /** Stored values nothing is left of once normalized (only format characters): left as they are. */
  unusable: number;
  /** Profiles whose `email` field was normalized. */
  emails: number;
}

export async function repairLookAlikeIdentifiers(
  db: Db,
  opts: { log?: Logger; signal?: AbortSignal; mergeCapOf?: (workspaceId: string) => Promise<number> } = {},
): Promise<LookAlikeReport> {
  const report: LookAlikeReport = {
    candidates: 0,
    renamed: 0,
    folded: 0,
    merged: 0,
    dropped: 0,
    unusable: 0,
    emails: 0,
  };
  const mergeCapOf = opts.mergeCapOf ?? (async () => MERGE_CAP);
  let after: string | null = null;
  for (;;) {
    opts.signal?.throwIfAborted();
    const { last, rows } = await scanLookAlikeNodes(db, after, WINDOW);
    if (last === null) break;
    after = last;
    for (const node of rows) {
      report.candidates++;
      const normal = normalizeStoredIdentifier(node.type, node.value);
      if (!normal) {
        report.unusable++;
        continue;
      }
      if (normal.type === node.type && normal.value === node.value) continue;
      const cap = await mergeCapOf(node.workspace_id);
      const outcome = await withRetry(() =>
        db
          .transaction((tx) => normalizeNode(tx, node, normal, cap))
          .catch((err: unknown) => {
            // The normal form was created by another writer meanwhile: read both again.
            if (isConflict(err)) throw staleLink();
            throw err;
          }),
      );
      if (outcome !== 'gone') report[outcome]++;
      if (outcome === 'dropped') {
        opts.log?.warn(
          { workspace_id: node.workspace_id, node_id: node.id, type: normal.type },
          'repair: a look-alike identifier was removed from a profile that could not be merged with the one holding its normal form',
        );
      }
    }
  }
  let afterSeq = 0;
  for (;;) {
    opts.signal?.throwIfAborted();
    const { last, rows } = await scanLookAlikeEmails(db, afterSeq, WINDOW);
    if (last === null) break;
    afterSeq = last;
    const changes = rows
      .map((r) => ({ id: r.id, from: r.email, to: normalizeEmail(r.email) }))
      .filter((c) => c.to !== c.from);
    report.emails += await setNormalizedEmails(db, changes);
  }
  return report;
}

type NodeOutcome = 'renamed' | 'folded' | 'merged' | 'dropped' | 'gone';

/** One look-alike node to its normal form, in one transaction (see repairLookAlikeIdentifiers). */
async function normalizeNode(
  tx: Queryable,
  seen: NodeRef,
  normal: Identifier,
  mergeCap: number,
): Promise<NodeOutcome> {
  const ws = seen.workspace_id;
  const key = { workspace_id: ws, type: normal.type, value: normal.value };
  const node = await findNodeById(tx, ws, seen.id);
  // Erased, folded or changed since the window was read: nothing of it to do any more.
  if (!node || node.type !== seen.type || node.value !== seen.value) return 'gone';
  const [target] = await findNodes(tx, [key]);
  if (!target) {
    await renameNode(tx, ws, node.id, normal);
    return 'renamed';
  }
  if (target.profile_id === node.profile_id) {
    await foldNode(tx, ws, node.id, target.id);
    return 'folded';
  }
  // Two profiles hold one identifier: lock both (the one lock order), then check nothing moved.
  const batch = createProfileBatch();
  const graph = createGraphBatch();
  const ids = [node.profile_id, target.profile_id];
  await lockInto(tx, batch, ids);
  const [again] = await findNodes(tx, [key]);
  const mine = await findNodeById(tx, ws, node.id);
  if (!again || !mine || again.profile_id !== target.profile_id || mine.profile_id !== node.profile_id) {
    throw staleLink();
  }
  await graph.loadViews(tx, ids, countMergedInto);
  const [older, newer] = ids
    .map((id) => batch.survivor(id)!)
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  const p = graph.view(older!.id);
  const s = graph.view(newer!.id);
  // The unique-identifier rule compares normal forms: the look-alike pair itself is no conflict.
  if (conflicts(normalView(p), normalView(s)) || p.mergedCount + 1 + s.mergedCount > mergeCap) {
    await deleteNode(tx, ws, node.id);
    return 'dropped';
  }
  const source = { type: 'api_key' as const, id: null };
  const now = new Date();
  batch.merge(older!, newer!, source, now);
  graph.merge(ws, older!.id, newer!.id);
  batch.mergedFact(ws, older!.id, [newer!.id], source);
  if ((await commitUnits(tx, batch, graph)) === 'stale') throw staleLink();
  await foldNode(tx, ws, node.id, target.id);
  return 'merged';
}

/** A profile's identifiers as the resolver sees them, in their normal forms. */
function normalView(v: OwnerView): OwnerView {
  const identities = new Map<Identifier['type'], Set<string>>();
  for (const [type, values] of v.identities) {
    for (const value of values) {
      const n = normalizeStoredIdentifier(type, value) ?? { type, value };
      identities.set(n.type, (identities.get(n.type) ?? new Set()).add(n.value));
    }
  }
  return { ...v, identities };
}

export function registerRepairJobs(
  runner: JobRunner,
  opts: { log: Logger; settings?: Pick<SettingsStore, 'read'> },
): void {
  runner.register(
    REPAIR_QUEUE,
    async (_payload, { db, signal }) => {
      const r = await repairStrandedOrders(db, signal);
      opts.log.info(
        { orders_moved: r.orders, merged_profiles: r.profiles, merged_profiles_scanned: r.scanned },
        r.orders > 0
          ? `repair: moved ${r.orders} orders stranded on ${r.profiles} merged-away profiles to their survivors`
          : 'repair: no orders stranded on merged-away profiles',
      );
    },
    // Pages of short transactions: an hour covers tens of millions of merged profiles; if it is cut
    // short it runs again from the start, and what it already moved is no longer stranded.
    { timeoutMs: 3_600_000, lane: 'analytics' },
  );
  runner.register(
    LOOK_ALIKES_QUEUE,
    async (_payload, { db, signal }) => {
      const settings = opts.settings;
      const r = await repairLookAlikeIdentifiers(db, {
        log: opts.log,
        signal,
        ...(settings ? { mergeCapOf: async (ws: string) => (await settings.read(db, ws)).merge_cap } : {}),
      });
      opts.log.info(
        { ...r },
        r.renamed + r.folded + r.merged + r.dropped + r.emails > 0
          ? `repair: look-alike identifiers normalized (${r.renamed} renamed, ${r.folded} folded, ${r.merged} profiles merged, ${r.dropped} removed, ${r.emails} e-mail fields)`
          : 'repair: no look-alike identifiers stored',
      );
    },
    // Short transactions, one per node; cut short, it runs again and finds only what is left.
    { timeoutMs: 3_600_000, lane: 'analytics' },
  );
}
