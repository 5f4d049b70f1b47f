import type { BatchProfile } from './profile-batch.types';
import { type JsonObject, jsonBytes } from './traits';

/**
 * How a profile appears in the outbox facts, and so in webhook bodies: enough for a receiver to act
 * without calling the API back, and bounded, so one fact never grows with a profile's history
 * (docs/webhooks.md, "Size").
 */
export const FACT_LIMITS = {
  /** A profile's attributes are carried when their JSON is at most this many bytes. */
  attributesBytes: 16 * 1024,
  /** Identifiers carried per profile (the oldest first); the rest are counted. */
  identities: 50,
} as const;

/** A profile in profile.created and profile.merged: the fields of GET /tenant/profiles/{id} that the change decided. */
export interface FactProfile {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  /** null when over FACT_LIMITS.attributesBytes (then `attributes_omitted` is true). */
  attributes: JsonObject | null;
  attributes_omitted: boolean;
  identities: Array<{ type: string; value: string }>;
  /** Identifiers beyond FACT_LIMITS.identities, left out. */
  identities_omitted: number;
  created_at: string;
  updated_at: string;
}

/** Who a fact is about, in facts that are not about the profile itself (orders, segments, churn). */
export interface ProfileSummary {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
}

export function factProfile(
  p: BatchProfile,
  identities: ReadonlyArray<{ type: string; value: string }>,
): FactProfile {
  const bytes = p.attributesBytes ?? jsonBytes(p.traits.attributes);
  const fits = bytes <= FACT_LIMITS.attributesBytes;
  return {
    id: p.id,
    email: p.traits.email,
    first_name: p.traits.first_name,
    last_name: p.traits.last_name,
    attributes: fits ? p.traits.attributes : null,
    attributes_omitted: !fits,
    identities: identities.slice(0, FACT_LIMITS.identities).map((i) => ({ type: i.type, value: i.value })),
    identities_omitted: Math.max(0, identities.length - FACT_LIMITS.identities),
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}
