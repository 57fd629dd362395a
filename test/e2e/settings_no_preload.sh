#!/usr/bin/env bash
# pg_tide where it is not preloaded, on a second throwaway server with
# shared_preload_libraries = 'pg_cron' only: CREATE EXTENSION says so, with
# the command that fixes it; PostgreSQL 15 then refuses ALTER SYSTEM SET
# tide.* in a fresh session (the reason for that advice), while LOAD, SET,
# ALTER DATABASE ... SET and ALTER ROLE ... SET work; and after running the
# hint's command and a restart, ALTER SYSTEM works in any session.
. "$(dirname "$0")/lib.bash"
keep_bin=$PG_BIN
. "$TIDE_SRC/tools/lib.sh"     # cluster_start, cluster_restart, cluster_stop
PG_BIN=$keep_bin

NP=$WORK/nopreload
mkdir -p "$NP"
port=$((59000 + RANDOM % 1000))
main_host=$PGHOST main_port=$PGPORT
( cluster_start "$NP" "$port" postgres ) >/dev/null || { echo "Bail out! second server did not start"; exit 1; }
at_exit "cluster_stop '$NP'"
sed -i "s/^shared_preload_libraries = .*/shared_preload_libraries = 'pg_cron'/" "$NP/data/postgresql.conf"
( cluster_restart "$NP" ) >/dev/null || { echo "Bail out! second server did not restart"; exit 1; }
export PGHOST=$NP PGPORT=$port
DB=postgres

out=$(psql -X -v ON_ERROR_STOP=1 -d postgres -c "CREATE EXTENSION pg_tide" 2>&1)
like "$out" "WARNING:  pg_tide is not in shared_preload_libraries" "CREATE EXTENSION warns that pg_tide is not preloaded"
like "$out" "DETAIL:  PostgreSQL 15 refuses ALTER SYSTEM SET tide" "and what that costs"
hint=$(printf '%s\n' "$out" | sed -n 's/^HINT:  //p')
like "$hint" "^Run ALTER SYSTEM SET shared_preload_libraries = 'pg_cron', 'pg_tide'; and restart PostgreSQL" \
    "the hint gives the exact command, keeping what is preloaded already"
like "$out" "CREATE EXTENSION" "the extension is created all the same"
is "$(q "SELECT tide._preloaded()")" f "tide._preloaded() is false"

err=$(q "ALTER SYSTEM SET tide.node_timeout = '60s'" 2>&1)
like "$err" 'unrecognized configuration parameter "tide.node_timeout"' \
    "PostgreSQL 15 refuses ALTER SYSTEM SET tide.* in a session that has not loaded pg_tide"
is "$(psql -qAtX -d postgres -c "LOAD 'pg_tide'" -c "ALTER SYSTEM SET tide.node_timeout = '60s'" 2>&1)" "" \
    "after LOAD 'pg_tide' in the session it works"
q "ALTER SYSTEM RESET ALL" >/dev/null
is "$(psql -qAtX -d postgres -c "SET tide.node_timeout = '45s'" -c "SHOW tide.node_timeout")" 45s "SET works in a session"
q "ALTER DATABASE postgres SET tide.reason_updates_per_cycle = 7" >/dev/null
is "$(q "SHOW tide.reason_updates_per_cycle")" 7 "ALTER DATABASE ... SET works (a new session has it)"
q "ALTER ROLE postgres SET tide.cycle_lock_timeout = '250ms'" >/dev/null
is "$(q "SHOW tide.cycle_lock_timeout")" 250ms "ALTER ROLE ... SET works"
q "ALTER ROLE postgres RESET tide.cycle_lock_timeout" >/dev/null

# follow the hint
cmd=${hint#Run }
q "${cmd%%;*}" >/dev/null
( cluster_restart "$NP" ) >/dev/null
is "$(q "SELECT tide._preloaded()")" t "after the hint's command and a restart pg_tide is preloaded"
is "$(q "ALTER SYSTEM SET tide.node_timeout = '60s'" 2>&1)" "" "and ALTER SYSTEM SET tide.node_timeout works in a fresh session"
out=$(psql -X -d postgres -c "DROP EXTENSION pg_tide" -c "CREATE EXTENSION pg_tide" 2>&1)
ok $(printf '%s' "$out" | grep -q WARNING && echo 1 || echo 0) "CREATE EXTENSION says nothing more"
is "$(q "SHOW tide.reason_updates_per_cycle")" 7 "the database's setting stays"
export PGHOST=$main_host PGPORT=$main_port
finish
