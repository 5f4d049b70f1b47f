import type { ConsentChoices } from '../modules/ingest';
import {
  type ConsentView,
  createProfileBatch,
  listMergedIds,
  lockInto,
  readConsent,
  recordConsentWrites,
  resolveProfileId,
  type Source,
  withRetry,
} from '../modules/profiles';
import {
  type ConsentDefaultOf,
  settleWithdrawal,
  type Withdrawal,
  type WithdrawalSubject,
  withdrawDeliveries,
} from '../modules/webhooks';
import type { Db, Queryable } from '../platform/db';

/**
 * What a consent choice does, written once (docs/profiles.md, "Consent"). Every entry point (PUT
 * /tenant/profiles/{id}/consent, and the pipeline's `apply consent` step for the choices events
 * carry) calls `applyConsentChoices` in its transaction, holding the profile's lock:
 *
 *   profiles   the choices that are newer than the recorded ones are recorded, with lineage
 *   webhooks   when a category was denied, the pending deliveries of facts about the profile to
 *              every subscription it no longer allows are cancelled (webhooks/consent.ts)
 *
 * The PUT then waits for the attempts that were under way when it committed, so that once it has
 * answered nothing more about the profile reaches those receivers, from any instance.
 */

export interface ConsentChoiceInput {
  workspaceId: string;
  /** A live profile whose lock the caller holds. */
  profileId: string;
  choices: ConsentChoices;
  at: Date;
  source: Source;
}

/**
 * Records the choices and withdraws what a denial takes back, in the caller's transaction. Several
 * inputs (the pipeline's batch) are applied in the order given, as one call each would apply them,
 * in a few statements whatever their number (recordConsentWrites); `defaultGranted` is each
 * workspace's `consent_default`.
 */
export async function applyConsentChoices(
  tx: Queryable,
  inputs: readonly ConsentChoiceInput[],
  defaultGranted: (workspaceId: string) => boolean,
): Promise<Withdrawal> {
  const recorded = await recordConsentWrites(tx, inputs);
  // Only a denial can take a delivery back; a grant applies to facts written from now on.
  const denied = new Map<string, Map<string, WithdrawalSubject>>();
  inputs.forEach((input, k) => {
    const { won, named } = recorded[k]!;
    if (!won.some((c) => !c.granted)) return;
    const subjects = denied.get(input.workspaceId) ?? new Map<string, WithdrawalSubject>();
    const subject = subjects.get(input.profileId) ?? { profileId: input.profileId, named: [] };
    subjects.set(input.profileId, { ...subject, named: [...subject.named, named] });
    denied.set(input.workspaceId, subjects);
  });
  const out: Withdrawal = { cancelled: 0, inFlight: [] };
  for (const [workspaceId, subjects] of denied) {
    const taken = await withdrawDeliveries(
      tx,
      workspaceId,
      [...subjects.values()],
      defaultGranted(workspaceId),
      async (profileId) => [profileId, ...(await listMergedIds(tx, workspaceId, profileId))],
    );
    out.cancelled += taken.cancelled;
    out.inFlight.push(...taken.inFlight);
  }
  return out;
}

export type ConsentAnswer = { profile_id: string } & ConsentView;

/**
 * PUT /tenant/profiles/{id}/consent: the choices recorded at the request's time for the profile (a
 * merged-away id: its survivor), the deliveries a denial takes back cancelled, and the attempts
 * under way waited for. Answers the profile's consent as it now stands.
 */
export async function setConsent(
  db: Db,
  consentDefault: ConsentDefaultOf,
  workspaceId: string,
  id: string,
  choices: ConsentChoices,
  apiKeyId: string | null,
): Promise<ConsentAnswer> {
  const { answer, withdrawal } = await withRetry(() =>
    db.transaction(async (tx) => {
      const profileId = await resolveProfileId(tx, workspaceId, id);
      // The profile's lock, as every writer takes it: no merge or erasure moves it meanwhile.
      await lockInto(tx, createProfileBatch(), [profileId]);
      const granted = await consentDefault(tx, workspaceId);
      const withdrawal = await applyConsentChoices(
        tx,
        [{ workspaceId, profileId, choices, at: new Date(), source: { type: 'api_key', id: apiKeyId } }],
        () => granted,
      );
      const answer = { profile_id: profileId, ...(await readConsent(tx, workspaceId, profileId)) };
      return { answer, withdrawal };
    }),
  );
  await settleWithdrawal(db, withdrawal);
  return answer;
}
