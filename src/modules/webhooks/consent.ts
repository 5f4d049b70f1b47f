import type { Db, Queryable } from '../../platform/db';
import { consentAllows, consentStates } from '../profiles';
import type { SettingsStore } from '../workspaces';
import { lockCursor } from './cursor.repo';
import { attemptsUnderWay, cancelPendingAbout } from './deliveries.repo';
import { webhookPolicy } from './policy';
import { enabledSubscriptions, type SubscriptionRow } from './webhooks.repo';

/**
 * Consent on the webhook output (docs/webhooks.md, "Consent"). A subscription that names
 * `consent_categories` gets a fact about a profile only when the profile has granted every one of
 * them; a category with no recorded choice counts as the workspace's `consent_default`. Three gates
 * keep a withdrawn profile's facts in:
 *
 *   fan-out      a fact about a profile that does not allow the subscription makes no delivery
 *   withdrawal   the pending deliveries (first attempts and retries) are cancelled in the transaction
 *                that records the choice, under the fan-out's lock of the workspace (the cursor row),
 *                so no fan-out that read the old choice can add one after it; an attempt already
 *                under way is waited for before the withdrawal answers
 *   re-send      a manual re-send of a delivery the profile no longer allows is refused
 *
 * The cancellation is in the database, so it holds on every instance: each one's deliverer takes an
 * attempt only from a pending delivery (takeAttempt).
 */

/** The workspace's `consent_default` as a boolean (true: granted), read through the caller's transaction. */
export type ConsentDefaultOf = (q: Queryable, workspaceId: string) => Promise<boolean>;

/** The consent default as the settings store says it (settings `consent_default`). */
export const consentDefaultFrom =
  (settings: Pick<SettingsStore, 'read'>): ConsentDefaultOf =>
  async (q, workspaceId) =>
    (await settings.read(q, workspaceId)).consent_default === 'granted';

/** Does the subscription get facts about this profile (null: a fact about no profile)? Pure. */
export function consentPermits(
  sub: Pick<SubscriptionRow, 'consent_categories'>,
  subject: string | null,
  states: ReadonlyMap<string, ReadonlyMap<string, boolean>>,
  defaultGranted: boolean,
): boolean {
  if (sub.consent_categories.length === 0 || subject === null) return true;
  return consentAllows(states.get(subject), sub.consent_categories, defaultGranted);
}

/** The consent states of the facts' profiles, read only when some subscription needs consent. */
export async function consentFor(
  q: Queryable,
  workspaceId: string,
  subs: readonly SubscriptionRow[],
  subjects: ReadonlyArray<string | null>,
  defaultOf: ConsentDefaultOf,
): Promise<{ states: Map<string, Map<string, boolean>>; defaultGranted: boolean }> {
  if (!subs.some((s) => s.consent_categories.length > 0)) return { states: new Map(), defaultGranted: true };
  const ids = subjects.filter((s): s is string => s !== null);
  return {
    states: await consentStates(q, workspaceId, ids),
    defaultGranted: await defaultOf(q, workspaceId),
  };
}

export interface Withdrawal {
  /** Deliveries cancelled. */
  cancelled: number;
  /** Deliveries whose attempt was under way when they were cancelled: `settleWithdrawal` waits for them. */
  inFlight: string[];
}

/** A profile whose consent a transaction denied something of, once or more. */
export interface WithdrawalSubject {
  profileId: string;
  /**
   * Its states after each write that denied a category, in order: of the categories the
   * transaction's writes named, null for no recorded choice (its other categories are as they
   * stand, read here when needed).
   */
  named: ReadonlyArray<ReadonlyMap<string, boolean | null>>;
}

/**
 * After profiles' consent changed (in the caller's transaction, which holds their locks): cancels
 * the pending deliveries of facts about each (the profile and those merged into it, `familyOf`) to
 * every enabled subscription one of its states no longer allows: each denial takes back what the
 * state it left refuses, as each would have one at a time. Only when some subscription needs
 * consent (else one read, and nothing more): then takes the fan-out's lock of the workspace, and
 * reads the profiles' other categories.
 */
export async function withdrawDeliveries(
  tx: Queryable,
  workspaceId: string,
  subjects: readonly WithdrawalSubject[],
  defaultGranted: boolean,
  familyOf: (profileId: string) => Promise<readonly string[]>,
): Promise<Withdrawal> {
  const out: Withdrawal = { cancelled: 0, inFlight: [] };
  if (subjects.length === 0) return out;
  const gated = (await enabledSubscriptions(tx, workspaceId)).filter((s) => s.consent_categories.length > 0);
  if (gated.length === 0) return out;
  // A fan-out under way finishes first (its deliveries are then cancelled here); one that starts
  // after this transaction reads the new choice.
  await lockCursor(tx, workspaceId);
  // As they stand after the writes: right for the categories they did not name, overlaid for those.
  const standing = await consentStates(
    tx,
    workspaceId,
    subjects.map((s) => s.profileId),
  );
  for (const subject of subjects) {
    const states = subject.named.map((named) => {
      const st = new Map(standing.get(subject.profileId));
      for (const [category, granted] of named) {
        if (granted === null) st.delete(category);
        else st.set(category, granted);
      }
      return st;
    });
    const refused = gated.filter((s) =>
      states.some((st) => !consentAllows(st, s.consent_categories, defaultGranted)),
    );
    if (refused.length === 0) continue;
    const taken = await cancelPendingAbout(
      tx,
      workspaceId,
      refused.map((s) => s.id),
      await familyOf(subject.profileId),
    );
    out.cancelled += taken.cancelled;
    out.inFlight.push(...taken.inFlight);
  }
  return out;
}

/** How often a withdrawal looks again at the attempts it waits for. */
const SETTLE_POLL_MS = 25;

/**
 * Waits, after the withdrawal committed, until every attempt that was under way has ended (its
 * outcome recorded): then nothing more about the profile reaches a receiver it no longer allows.
 * Bounded by the send timeout and the attempt's bookkeeping; answers the ids still under way then.
 */
export async function settleWithdrawal(db: Db, w: Withdrawal): Promise<string[]> {
  const deadline = Date.now() + webhookPolicy.timeoutMs + 5_000;
  let busy = w.inFlight;
  while (busy.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
    busy = await attemptsUnderWay(db, busy);
  }
  return busy;
}
