#!/usr/bin/env bash
# Runs `agent projections rebuild --verify` over every database a test suite kept
# (AGENT_TEST_KEEP_DBS=1 npm test, with DATABASE_URL pointing at a server that outlives the suite),
# prints one line per database and a total, and with --drop removes them afterwards.
# Issue 24's acceptance: the read models rebuilt from the full suite's events differ in 0 rows.
set -uo pipefail
cd "$(dirname "$0")/.."
admin="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
base="${admin%/*}"
dbs=$(psql "$admin" -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'agent\_test\_%' ORDER BY 1")
ok=0; differ=0; skipped=0
for db in $dbs; do
  # A file that tests an unmigrated database leaves one without the event log: nothing to verify.
  if [ "$(psql "$base/$db" -Atc "SELECT to_regclass('public.events') IS NOT NULL")" != "t" ]; then
    skipped=$((skipped + 1)); continue
  fi
  out=$(DATABASE_URL="$base/$db" node dist/src/main.js projections rebuild --verify 2>&1)
  if [ $? -eq 0 ]; then ok=$((ok + 1)); else differ=$((differ + 1)); echo "== $db differs:"; echo "$out" | grep -v ' ok$' | head -20; fi
done
echo "verified: $ok databases with 0 differing rows, $differ with differences, $skipped without an event log"
if [ "${1:-}" = "--drop" ]; then
  for db in $dbs; do psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done
fi
[ "$differ" -eq 0 ]
