import { defineConfig } from 'vitest/config';
import { engineSplit } from './scripts/engine-files.mjs';

// Two projects, one suite (docs/testing.md, "Two passes, one suite"): `engine` holds the files whose
// run can depend on the database engine (or Redis), `once` the rest. `npx vitest run` runs both;
// the PostgreSQL pass of `npm test` runs `--project engine` only, since a file of `once` would run
// the same code again. What goes where is read from the imports (scripts/engine-files.mjs), so a new
// database test is in `engine` without anyone listing it.
const { bound, free } = engineSplit(import.meta.dirname);

export default defineConfig({
  test: {
    pool: 'forks',
    // A migrated embedded database every PGlite of the run starts from (test/global-setup.ts).
    globalSetup: ['test/global-setup.ts'],
    // Two cores: more parallel files only add contention (each PGlite holds its own Postgres).
    maxWorkers: 2,
    minWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'engine', include: bound } },
      { extends: true, test: { name: 'once', include: free } },
    ],
  },
});
