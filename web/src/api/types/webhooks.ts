export const WEBHOOK_EVENTS = [
  'profile.created',
  'profile.merged',
  'order.completed',
  'churn.risk_escalated',
  'segment.entered',
  'segment.exited',
] as const;

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  secret: string;
  previous_secret_expires_at: string | null;
  segments: string[];
  /** Facts about a profile go out only while it has granted all of these (docs/webhooks.md, "Consent"). */
  consent_categories: string[];
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed' | 'dead' | 'erased' | 'cancelled';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  created_at: string;
}

export interface Attempt {
  n: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  attempted_at: string;
}
