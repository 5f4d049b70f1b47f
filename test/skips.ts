import { describe, it, type SuiteFactory, type TestFunction, type TestOptions } from 'vitest';

/**
 * Why a test does not run, said the same way everywhere (docs/testing.md), so that the summary of a
 * run (scripts/summarize.mjs) can tell the two kinds of skip apart:
 *
 * - **not applicable**: the case does not exist here (a multi-process test on the single-process
 *   embedded engine, a listing without filters). Nothing is missing; another run covers it.
 *   `onlyOn('postgres', 'PGlite is one process')`, `appliesWhen(filters.length > 0, 'no filters')`.
 * - **missing**: the environment lacks something the test needs (Redis, PostgreSQL's server
 *   binaries, openssl). That is a gap in what was tested: under CI=true the summary fails the run.
 *   `needs('redis')`, `needs('openssl', hasOpenssl)`.
 *
 * A skipped test carries its reason in its name, as a marker the JSON report keeps:
 * `[not applicable on pglite: PGlite is one process]`, `[not applicable: no filters]`,
 * `[needs redis: TEST_REDIS_URL]`. A test that runs carries no marker.
 */

export type Engine = 'pglite' | 'postgres';

/** The engine of this run: PostgreSQL when DATABASE_URL is set, else embedded PGlite. */
export const ENGINE: Engine = process.env.DATABASE_URL ? 'postgres' : 'pglite';

/** What a test may need from the machine it runs on. */
export type Need =
  | 'redis'
  | 'postgresql server binaries'
  | 'openssl'
  | 'process start times'
  | 'chromium'
  | 'the web console build'
  | 'root, to act as the user nobody';

/** How to provide what is missing, where the environment variable says it. */
const DETECTED: Partial<Record<Need, { present: () => boolean; how: string }>> = {
  redis: { present: () => Boolean(process.env.TEST_REDIS_URL), how: 'TEST_REDIS_URL' },
};

export interface Gate {
  /** The marker a skipped test's name carries; null when the tests run. */
  readonly marker: string | null;
  describe(name: string, fn: SuiteFactory): void;
  it(name: string, fn: TestFunction, options?: number | TestOptions): void;
  /** Runs only when both gates let it; the first one that does not names the skip. */
  and(other: Gate): Gate;
}

function gate(marker: string | null): Gate {
  const name = (n: string) => (marker ? `${n} ${marker}` : n);
  return {
    marker,
    describe: (n, fn) => describe.skipIf(marker !== null)(name(n), fn),
    it: (n, fn, options) => it.skipIf(marker !== null)(name(n), fn, options),
    and: (other) => gate(marker ?? other.marker),
  };
}

const clean = (why: string) => why.replace(/[[\]]/g, '');

/** Runs on `engine` only; on the other it is skipped as not applicable, for `why`. */
export function onlyOn(engine: Engine, why: string): Gate {
  return gate(ENGINE === engine ? null : `[not applicable on ${ENGINE}: ${clean(why)}]`);
}

/** Runs where `applies`; elsewhere skipped as not applicable, for `why` (a table row without the case). */
export function appliesWhen(applies: boolean, why: string): Gate {
  return gate(applies ? null : `[not applicable: ${clean(why)}]`);
}

/**
 * Runs when the environment provides `what`: detected for Redis (TEST_REDIS_URL), told by the
 * caller otherwise. Skipped for a missing service, which fails a CI run (scripts/summarize.mjs).
 */
export function needs(what: 'redis'): Gate;
export function needs(what: Need, present: boolean): Gate;
export function needs(what: Need, present?: boolean): Gate {
  const detected = DETECTED[what];
  const here = present ?? detected?.present() ?? false;
  return gate(here ? null : `[needs ${what}${detected ? `: ${detected.how}` : ''}]`);
}
