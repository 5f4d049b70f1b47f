/**
 * The workloads of the "trait merges freeze the process" finding, shared by test/stall.test.ts (scaled
 * to the limits, with a generous bound) and bench/stall.bench.ts (full size, p50/p99/max against the
 * 50 ms ceiling): big profile writes and big identify batches for one person, sent to a real service
 * over HTTP while a probe measures how long `GET /health` takes to answer.
 *
 * Everything a workload sends is serialized before the probe starts, so the probe's figures measure
 * the service, not this process.
 */

import { letTimePass, waitUntil } from './wait';

export interface HealthProbe {
  /** Stops probing; resolves with every /health latency measured, in milliseconds. */
  stop(): Promise<number[]>;
}

/** GETs /health back to back (one in flight, `gapMs` apart) until stopped. */
export function probeHealth(baseUrl: string, gapMs = 5): HealthProbe {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const res = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(120_000) });
        await res.arrayBuffer();
      } catch {
        // A refused or timed-out probe still counts with the time it took.
      }
      samples.push(performance.now() - t0);
      await letTimePass(gapMs, 'the gap between two probes');
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

/** The q-quantile (0..1) of the samples, nearest rank. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** `{g000: {k000: value, …}, …}`: `groups` objects of `perGroup` keys, groups numbered from `first`. */
export function nestedAttributes(
  groups: number,
  perGroup: number,
  value: number,
  first = 0,
): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (let g = first; g < first + groups; g++) {
    const group: Record<string, number> = {};
    for (let k = 0; k < perGroup; k++) group[`k${String(k).padStart(3, '0')}`] = value;
    out[`g${String(g).padStart(3, '0')}`] = group;
  }
  return out;
}

/** Short trait names (base 36), so that 3,000 of them still fit one event's 32 KiB payload. */
export const traitName = (i: number): string => `t${i.toString(36)}`;

/**
 * `events` identify events of one identity, each setting the same `traits` traits to its own index,
 * with timestamps rising by a second: the last event's values are the ones that must win.
 */
export function identifyBatch(identity: string, events: number, traits: number, from = Date.UTC(2025, 0, 1)) {
  return Array.from({ length: events }, (_, e) => {
    const payload: Record<string, number> = {};
    for (let i = 0; i < traits; i++) payload[traitName(i)] = e;
    return {
      event_type: 'identify',
      event_name: 'Traits',
      identity,
      payload,
      timestamp: new Date(from + e * 1000).toISOString(),
    };
  });
}

/**
 * Identify events of 1,000 traits for one person, as many as a batch body of `bytes` holds (the
 * 4 MiB limit, less a margin), the last one invalid: the answer (a 400 naming it, nothing stored)
 * comes only after every item was parsed and validated. json-body.test.ts and
 * bench/batch-parse.bench.ts send it.
 */
export function batchRefusedAtItsLastItem(bytes = 4 * 1024 * 1024 - 1024): Array<Record<string, unknown>> {
  const events: Array<Record<string, unknown>> = [];
  let size = 2;
  for (;;) {
    const payload: Record<string, number> = {};
    for (let k = 0; k < 1000; k++) payload[`trait${k}`] = events.length;
    const ev = { event_type: 'identify', event_name: 'Traits', identity: 'slices@example.com', payload };
    const more = JSON.stringify(ev).length + 1;
    if (size + more > bytes) break;
    events.push(ev);
    size += more;
  }
  events[events.length - 1]!.event_type = 'nope';
  return events;
}

export interface Sent {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are inspected field by field
  body: any;
  ms: number;
}

/** Sends an already serialized JSON body. */
export async function send(baseUrl: string, key: string, method: string, path: string, body?: string) {
  const t0 = performance.now();
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body ?? null,
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, ms: performance.now() - t0 } as Sent;
}

/** Reads the profile owning `identity` until `done(profile)` holds (or `timeoutMs` passes). */
export async function waitForProfile(
  baseUrl: string,
  key: string,
  identity: string,
  // biome-ignore lint/suspicious/noExplicitAny: a profile as the API answers it
  done: (profile: any) => boolean,
  timeoutMs = 120_000,
  // biome-ignore lint/suspicious/noExplicitAny: a profile as the API answers it
): Promise<any> {
  return waitUntil(
    async () => {
      const res = await send(
        baseUrl,
        key,
        'GET',
        `/tenant/profiles?identity=${encodeURIComponent(identity)}`,
      );
      const profile = res.status === 200 ? res.body.data[0] : undefined;
      return profile && done(profile) ? profile : null;
    },
    { what: `the profile of ${identity} as expected`, timeoutMs, intervalMs: 100 },
  );
}
