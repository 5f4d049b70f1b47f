import { AppError, type ErrorDetail } from '../../platform/errors';
import { type NewEvent, validateEvents } from '../ingest';
import { type GroupWrite, type MessageType, mapMessage, messagePath } from './tracking.mapping';

/** Details named in a refusal or in the answer's `refused` list, at most. */
export const MAX_DETAILS = 100;

export const refuse = (message: string, details: ErrorDetail[]) =>
  new AppError('VALIDATION_ERROR', message, { details: details.slice(0, MAX_DETAILS) });

type Obj = Record<string, unknown>;

export interface Outcome {
  events: NewEvent[];
  groups: GroupWrite[];
  refused: ErrorDetail[];
}

/**
 * Maps the messages and checks the events they become with the ingest rules: a message that cannot
 * be an event is left out and named, the others go on.
 */
export function mapAll(
  messages: readonly unknown[],
  type: MessageType | null,
  ctx: { receivedAt: number; sentAt?: unknown; context?: unknown; batch: boolean },
): Outcome {
  const refused: ErrorDetail[] = [];
  const mapped: Array<{ at: string; type: string; event: NewEvent; group: GroupWrite | null }> = [];
  // One context for every message, its `at` moved along (no copy per message: a batch's cost).
  const shared = { receivedAt: ctx.receivedAt, sentAt: ctx.sentAt, context: ctx.context, at: '' };
  messages.forEach((m, i) => {
    const at = ctx.batch ? `/batch/${i}` : '';
    shared.at = at;
    const r = mapMessage(m, type, shared);
    if (!r.ok) refused.push(...r.details);
    else mapped.push({ at, type: type ?? String((m as Obj).type), event: r.event, group: r.group });
  });
  const problems = validateEvents(
    mapped.map((m) => m.event),
    ctx.receivedAt,
  );
  const bad = new Set<number>();
  for (const d of problems) {
    const index = Number(/^\/(\d+)/.exec(d.path)?.[1]);
    const m = mapped[index]!;
    bad.add(index);
    refused.push({ path: messagePath(d.path, m.type, m.at), message: d.message });
  }
  const ok = mapped.filter((_, i) => !bad.has(i));
  return {
    events: ok.map((m) => m.event),
    groups: ok.flatMap((m) => (m.group ? [m.group] : [])),
    refused,
  };
}
