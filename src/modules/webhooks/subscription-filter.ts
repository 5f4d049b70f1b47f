import type { SubscriptionRow } from './webhooks.repo';

/** Fact kinds a subscription's segment filter applies to; every other kind passes it untouched. */
const SEGMENT_KINDS: ReadonlySet<string> = new Set(['segment.entered', 'segment.exited']);

/**
 * Whether a subscription wants a fact: its type must be one of the subscription's `events`, and a
 * segment fact (`segment.entered` / `segment.exited`, data `{segment_id, profile_id}`) must be of one
 * of its `segments` when that list is not empty. Pure: the fan-out decides with it, tests prove it.
 * The subscription's creation time and `enabled` are the caller's business.
 */
export function subscriptionWants(
  sub: Pick<SubscriptionRow, 'events' | 'segments'>,
  fact: { type: string; data: Record<string, unknown> },
): boolean {
  if (!sub.events.includes(fact.type)) return false;
  if (!SEGMENT_KINDS.has(fact.type) || sub.segments.length === 0) return true;
  const segmentId = fact.data.segment_id;
  return typeof segmentId === 'string' && sub.segments.includes(segmentId);
}
