#!/usr/bin/env bash
# The whole test gate: lint, types, then the suite on PGlite and again on PostgreSQL (plus Redis), the
# second time only the files whose run can depend on the engine (docs/testing.md).
# PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) and Redis at
# TEST_REDIS_URL (default redis://127.0.0.1:6379) are used when reachable; under CI=true they are
# required, so a CI run can never silently test only one engine; the summary (scripts/summarize.mjs)
# also fails a CI run in which a test was skipped for a missing service (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

PG_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
REDIS="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
mkdir -p .test-results
rm -f .test-results/*.json

# Each phase says how long it took, so a slow CI run shows where its time went.
phase_start=$SECONDS
took() { echo "== $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

echo "== lint (biome)"
npx --no-install biome check .
echo "== typecheck (tsc)"
npx --no-install tsc -p tsconfig.json
npx --no-install tsc -p web/tsconfig.json   # the console (web/), its own DOM + JSX settings
took "lint and typecheck"

have_pg=0; have_redis=0
node scripts/probe.mjs pg "$PG_URL" && have_pg=1 || true
node scripts/probe.mjs redis "$REDIS" && have_redis=1 || true
if [ "${CI:-}" = "true" ]; then
  [ "$have_pg" = 1 ] || { echo "CI: PostgreSQL at $PG_URL is required"; exit 1; }
  [ "$have_redis" = 1 ] || { echo "CI: Redis at $REDIS is required"; exit 1; }
fi
redis_env=()
[ "$have_redis" = 1 ] && redis_env=(TEST_REDIS_URL="$REDIS")

status=0
echo "== tests on PGlite (embedded)"
env -u DATABASE_URL "${redis_env[@]}" npx --no-install vitest run \
  --reporter=default --reporter=json --outputFile.json=.test-results/pglite.json || status=1
took "the PGlite pass"

if [ "$have_pg" = 1 ]; then
  # Only the files that can tell the engines apart (vitest.config.ts, scripts/engine-files.mjs): the
  # others would run the same code again. The summary checks that none of the first kind is missing.
  echo "== tests on PostgreSQL ($PG_URL): the files that can tell the engines apart"
  env DATABASE_URL="$PG_URL" "${redis_env[@]}" npx --no-install vitest run --project engine \
    --reporter=default --reporter=json --outputFile.json=.test-results/postgres.json || status=1
  took "the PostgreSQL pass"
else
  echo "== PostgreSQL not reachable at $PG_URL: skipped the PostgreSQL run"
fi

node scripts/summarize.mjs .test-results/*.json || status=1
exit $status
