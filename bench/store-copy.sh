#!/usr/bin/env bash
# `folio store copy` of a state root with 10,000 sessions (three events each, generated through
# the store API) to PostgreSQL and back, each copy verified; prints the times
# (bench/RESULTS.md, "Copying a store"). Starts a throwaway PostgreSQL under $PG_DIR unless
# FOLIO_TEST_DATABASE_URL names one. Runs the ignored test
# `bench_copy_ten_thousand_sessions_to_postgres_and_back` of crates/folio-cli/tests/store_copy.rs
# in the profile given as $PROFILE (default: dev, what `cargo test` builds).
set -euo pipefail
cd "$(dirname "$0")/.."
pg_dir=${PG_DIR:-/tmp/folio-bench-store-copy}
started=""
if [ -z "${FOLIO_TEST_DATABASE_URL:-}" ]; then
  FOLIO_TEST_DATABASE_URL=$(scripts/postgres start "$pg_dir")
  export FOLIO_TEST_DATABASE_URL
  started=yes
fi
stop() { [ -n "$started" ] && scripts/postgres stop "$pg_dir" >/dev/null || true; }
trap stop EXIT
cargo test --profile "${PROFILE:-dev}" -p folio-cli --test store_copy -- --ignored --nocapture \
  bench_copy_ten_thousand_sessions_to_postgres_and_back
