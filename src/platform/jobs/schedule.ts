/**
 * Schedule specs, pure. Two forms, always in UTC:
 * - `every <n><s|m|h|d>` (e.g. `every 30s`, `every 5m`): ticks at multiples of the period since the
 *   Unix epoch, so every process computes the same ticks;
 * - five cron fields `minute hour day-of-month month day-of-week`, each `*`, `n`, `a-b`, `*∕k`,
 *   `a-b/k` or a comma list of those (day-of-week 0–6, Sunday 0; 7 is also Sunday). As in cron,
 *   when both day fields are restricted a day matching either one fires.
 */
export type Schedule =
  | { kind: 'every'; periodMs: number }
  | {
      kind: 'cron';
      minutes: ReadonlySet<number>;
      hours: ReadonlySet<number>;
      days: ReadonlySet<number>;
      months: ReadonlySet<number>;
      weekdays: ReadonlySet<number>;
      /** Whether each day field was `*` (cron's either-day rule applies only when both are restricted). */
      anyDay: boolean;
      anyWeekday: boolean;
    };

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MAX_PERIOD_MS = 366 * UNIT_MS.d;
/** A spec that finds no tick within this many years never fires (`0 0 30 2 *`): refused. */
const HORIZON_YEARS = 8;

export class ScheduleSpecError extends Error {}

export function parseSchedule(spec: string): Schedule {
  const text = spec.trim().toLowerCase();
  const every = /^every\s+(\d{1,9})\s*([smhd])$/.exec(text);
  if (every) {
    const periodMs = Number(every[1]) * UNIT_MS[every[2] as keyof typeof UNIT_MS];
    if (periodMs < 1_000 || periodMs > MAX_PERIOD_MS) {
      throw new ScheduleSpecError(`"${spec}": the period must be between 1s and 366d`);
    }
    return { kind: 'every', periodMs };
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) {
    throw new ScheduleSpecError(`"${spec}" is neither "every <n><s|m|h|d>" nor five cron fields`);
  }
  const [mi, ho, dm, mo, dw] = fields as [string, string, string, string, string];
  const weekdays = parseField(dw, 0, 7, 'day-of-week', spec);
  if (weekdays.has(7)) {
    weekdays.delete(7);
    weekdays.add(0);
  }
  const schedule: Schedule = {
    kind: 'cron',
    minutes: parseField(mi, 0, 59, 'minute', spec),
    hours: parseField(ho, 0, 23, 'hour', spec),
    days: parseField(dm, 1, 31, 'day-of-month', spec),
    months: parseField(mo, 1, 12, 'month', spec),
    weekdays,
    anyDay: dm === '*',
    anyWeekday: dw === '*',
  };
  if (nextTick(schedule, new Date(Date.UTC(2000, 0, 1))) === null) {
    throw new ScheduleSpecError(`"${spec}" never fires`);
  }
  return schedule;
}

function parseField(field: string, min: number, max: number, name: string, spec: string): Set<number> {
  const out = new Set<number>();
  const bad = (why: string) => new ScheduleSpecError(`"${spec}": ${name} field "${field}" ${why}`);
  for (const part of field.split(',')) {
    const m = /^(\*|(\d{1,2})(?:-(\d{1,2}))?)(?:\/(\d{1,2}))?$/.exec(part);
    if (!m) throw bad('is not *, n, a-b, */k or a-b/k');
    const star = m[1] === '*';
    const from = star ? min : Number(m[2]);
    // `n/k` means n, n+k, … up to the maximum, as in Vixie cron.
    const to = star ? max : m[3] !== undefined ? Number(m[3]) : m[4] !== undefined ? max : from;
    const step = m[4] !== undefined ? Number(m[4]) : 1;
    if (from < min || to > max || from > to) throw bad(`is outside ${min}-${max}`);
    if (step < 1) throw bad('has a step of 0');
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

/** Whether the minute starting at `t` (UTC) is a tick of a cron schedule. */
export function cronMatches(s: Extract<Schedule, { kind: 'cron' }>, t: Date): boolean {
  return (
    s.minutes.has(t.getUTCMinutes()) &&
    s.hours.has(t.getUTCHours()) &&
    s.months.has(t.getUTCMonth() + 1) &&
    dayMatches(s, t)
  );
}

function dayMatches(s: Extract<Schedule, { kind: 'cron' }>, t: Date): boolean {
  const dom = s.days.has(t.getUTCDate());
  const dow = s.weekdays.has(t.getUTCDay());
  if (!s.anyDay && !s.anyWeekday) return dom || dow;
  return dom && dow;
}

/** The first tick strictly after `after`, or null if there is none within the horizon. */
export function nextTick(s: Schedule, after: Date): Date | null {
  const a = after.getTime();
  if (s.kind === 'every') return new Date((Math.floor(a / s.periodMs) + 1) * s.periodMs);
  // Walk forward, skipping a whole month, day or hour whenever that unit cannot match.
  const t = new Date(Math.floor(a / 60_000) * 60_000 + 60_000);
  const limit = a + HORIZON_YEARS * 366 * UNIT_MS.d;
  while (t.getTime() <= limit) {
    if (!s.months.has(t.getUTCMonth() + 1)) {
      t.setUTCMonth(t.getUTCMonth() + 1, 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(s, t)) {
      t.setUTCDate(t.getUTCDate() + 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!s.hours.has(t.getUTCHours())) {
      t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
    } else if (!s.minutes.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
    } else {
      return t;
    }
  }
  return null;
}
