import type { TimelineEvent } from './profiles';

// The workspace, its keys and settings, and what its operations pages read.

export type Scope = 'admin' | 'editor' | 'viewer' | 'ingest';

export interface Session {
  workspace_id: string;
  workspace_name: string;
  key_id: string;
  key_name?: string | null;
  scopes: Scope[];
  expires_at: string;
  idle_expires_at: string;
  csrf_token: string;
}

export interface Stats {
  generated_at: string;
  events_per_minute: { minute: string; count: number }[];
  profiles: number;
  profiles_new_today: number;
  revenue: { currency: string; total: number; orders: number }[];
  ingestion_backlog: number;
  processing_lag_seconds: number | null;
  dead_letters: number;
}

export interface ApiKey {
  id: string;
  name: string;
  scopes: Scope[];
  allowed_domains: string[];
  created_at: string;
  api_key?: string;
}

export interface Settings {
  rate_limits: { requests_per_minute: number; batch_events_per_minute: number };
  junk_identifiers: string[];
  merge_cap: number;
  churn_threshold: number;
  discount_rate: number;
  clv_horizon_days: number;
  analytics_concurrency: number;
  /** What a consent category with no recorded choice counts as. */
  consent_default: 'granted' | 'denied';
}

export interface DeadLetter {
  id: string;
  reason: string;
  attempts: number;
  failed_at: string;
  event: TimelineEvent;
}

export interface StreamEvent {
  id: string;
  type: string;
  event_name: string;
  anonymous_id: string | null;
  identity: string | null;
  occurred_at: string;
  received_at: string;
  payload: Record<string, unknown>;
}
