export interface Profile {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  total_spend: number;
  rfm_segment: string | null;
  churn_risk_score: number | null;
  predicted_clv: number | null;
  created_at: string;
  updated_at: string;
  attributes: Record<string, unknown>;
  identities: { type: string; value: string }[];
  /** Present on `GET /tenant/profiles/{id}` (not on the listing): docs/profiles.md, "Consent". */
  consent?: Consent;
}

/** One recorded consent choice: granted or denied, when, and by which event or API key. */
export interface ConsentChoice {
  granted: boolean;
  updated_at: string;
  source_type: 'event' | 'api_key';
  /** The event id (evt_…) or API key id (key_…). */
  source_id: string | null;
}

/** A category with no recorded choice counts as the workspace's `consent_default`. */
export interface Consent {
  categories: Record<string, ConsentChoice>;
}

/** `PUT /tenant/profiles/{id}/consent` answers the survivor's id and every category it now has. */
export interface ConsentAnswer extends Consent {
  profile_id: string;
}

export interface TimelineEvent {
  id: string;
  event_type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  payload: Record<string, unknown>;
  timestamp: string;
  received_at: string;
}

export interface LineageEntry {
  path: string;
  old: unknown;
  new: unknown;
  source_type: 'event' | 'api_key';
  source_id: string | null;
  merged_from: string | null;
  occurred_at: string;
  recorded_at: string;
}

export interface IdentityGraph {
  profile_id: string;
  nodes: { id: string; type: string; value: string; first_seen: string; last_seen: string }[];
  edges: { from: string; to: string; event_id: string | null; created_at: string }[];
  merged_profile_ids: string[];
}

export interface Erasure {
  id: string;
  profile_id: string;
  erased_profile_ids: string[];
  suppressed: boolean;
  counts: Record<string, number>;
}
