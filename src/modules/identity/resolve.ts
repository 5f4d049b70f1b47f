import type { Identifier, IdentifierType } from './identifiers';

/**
 * The identity resolver's decision for one event (docs/profiles.md), pure: given who owns the event's
 * identity and anonymous id, say which profile the event belongs to and what changes in the graph.
 * The worker and the API shells do the reading and writing.
 */

/**
 * Most merged-away ids one profile may hold by default (docs/profiles.md); a workspace may set its own
 * (`settings.merge_cap`). A merge past the cap is refused (and logged by the shell).
 */
export const MERGE_CAP = 100;

/** What the resolver needs to know about a profile that owns one of the event's identifiers. */
export interface OwnerView {
  id: string;
  /** The non-anonymous identifiers the profile holds, by type (a manual merge can leave several). */
  identities: ReadonlyMap<IdentifierType, ReadonlySet<string>>;
  /** How many profiles have been merged into this one. */
  mergedCount: number;
}

export interface ResolveInput {
  /** The event's classified identity; null when absent or junk. */
  identity: Identifier | null;
  /** The event's anonymous id; null when absent or junk. */
  anonymous: Identifier | null;
  identityOwner: OwnerView | null;
  anonymousOwner: OwnerView | null;
  /** Identifiers on the suppression list (erased with `suppress=true`) never link or create. */
  identitySuppressed?: boolean;
  anonymousSuppressed?: boolean;
  /** The workspace's merge cap (default MERGE_CAP). */
  mergeCap?: number;
}

export type Refusal =
  /** The two profiles hold different identifiers of one type: never merged automatically. */
  | 'unique_identifier'
  /** The merge would give the survivor more merged ids than the merge cap. */
  | 'merge_cap';

export type Decision =
  /** Apply to an existing profile, attaching the identifiers it does not hold yet. */
  | { kind: 'join'; profileId: string; attach: Identifier[]; refused?: Refusal }
  /** Create a profile holding these identifiers. */
  | { kind: 'create'; attach: Identifier[]; refused?: Refusal }
  /** Merge `secondary` (the anonymous id's profile) into `primary` (the identity's), then apply there. */
  | { kind: 'merge'; primary: string; secondary: string }
  /** Nothing usable: no identifier left after junk and suppression filtering. */
  | { kind: 'drop'; reason: 'no_identifier' | 'suppressed' };

/** True when `a` and `b` each hold a different identifier of some same type (the unique-identifier rule). */
export function conflicts(a: OwnerView, b: OwnerView): boolean {
  for (const [type, values] of a.identities) {
    const other = b.identities.get(type);
    if (!other || other.size === 0 || values.size === 0) continue;
    for (const v of values) if (!other.has(v)) return true;
    for (const v of other) if (!values.has(v)) return true;
  }
  return false;
}

/** True when giving `owner` this identity would make it hold two identifiers of one type. */
function holdsOtherOfType(owner: OwnerView, id: Identifier): boolean {
  const held = owner.identities.get(id.type);
  return held !== undefined && held.size > 0 && !held.has(id.value);
}

export function decide(input: ResolveInput): Decision {
  const identity = input.identitySuppressed ? null : input.identity;
  const anonymous = input.anonymousSuppressed ? null : input.anonymous;
  const idOwner = identity ? input.identityOwner : null;
  const anonOwner = anonymous ? input.anonymousOwner : null;
  const anySuppressed = Boolean(
    (input.identitySuppressed && input.identity) || (input.anonymousSuppressed && input.anonymous),
  );

  if (!identity && !anonymous)
    return { kind: 'drop', reason: anySuppressed ? 'suppressed' : 'no_identifier' };

  if (idOwner) {
    if (!anonymous || !anonOwner) {
      return { kind: 'join', profileId: idOwner.id, attach: anonymous ? [anonymous] : [] };
    }
    if (anonOwner.id === idOwner.id) return { kind: 'join', profileId: idOwner.id, attach: [] };
    // The anonymous id already belongs to someone else: merge that profile into the identified one,
    // unless they are provably different people or the survivor is full.
    if (conflicts(idOwner, anonOwner)) {
      return { kind: 'join', profileId: idOwner.id, attach: [], refused: 'unique_identifier' };
    }
    if (idOwner.mergedCount + 1 + anonOwner.mergedCount > (input.mergeCap ?? MERGE_CAP)) {
      return { kind: 'join', profileId: idOwner.id, attach: [], refused: 'merge_cap' };
    }
    return { kind: 'merge', primary: idOwner.id, secondary: anonOwner.id };
  }

  if (anonOwner) {
    if (!identity) return { kind: 'join', profileId: anonOwner.id, attach: [] };
    // A shared device: the anonymous id's profile is already someone else (another e-mail). The
    // new identity gets its own profile; the anonymous id stays where it is.
    if (holdsOtherOfType(anonOwner, identity)) {
      return { kind: 'create', attach: [identity], refused: 'unique_identifier' };
    }
    return { kind: 'join', profileId: anonOwner.id, attach: [identity] };
  }

  // Nobody owns either identifier. A suppressed identifier on the event means the person was erased
  // with suppression: a fresh anonymous id must not quietly start tracking them again.
  if (anySuppressed) return { kind: 'drop', reason: 'suppressed' };
  const attach: Identifier[] = [];
  if (identity) attach.push(identity);
  if (anonymous) attach.push(anonymous);
  return { kind: 'create', attach };
}
