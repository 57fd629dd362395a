#!/usr/bin/env bash
# N real launchers (one per node) on one server, connected two ways, one
# after the other on the same throwaway server:
#   direct     each launcher its own backend, LISTENing on its channel;
#   pgbouncer  through PgBouncer in transaction pooling (pool of POOL server
#              connections): LISTEN cannot be relied on there, so the
#              launchers claim by polling (--poll-interval POLL); a
#              notification that reaches one is a bonus, never needed.
# For each: server backends, their memory (Pss), idle load (transactions
# per second with nothing to do), and for R jobs placed one at a time on
# random nodes by a real tide.run_cycle(): the time from the cycle's end
# to the allocation's started_at.
#
#   flock -o /tmp/pg_tide_install.lock bash -c 'make install && bash bench/listeners_pgbouncer.sh 500'
#   BENCH_POOL=20 BENCH_POLL=2 BENCH_ROUNDS=20 bash bench/listeners_pgbouncer.sh 500
#
# Needs pgbouncer (apt-get install pgbouncer).  BENCH_PG_BIN: another
# PostgreSQL installation that has this build installed.
. "$(dirname "$0")/launcher_lib.bash"
PG_BIN=${BENCH_PG_BIN:-$PG_BIN}
N=${1:-500}
POOL=${BENCH_POOL:-20}
POLL=${BENCH_POLL:-2}
ROUNDS=${BENCH_ROUNDS:-20}
command -v pgbouncer >/dev/null || die "pgbouncer is not installed (apt-get install pgbouncer)"
ulimit -n $((N * 4 + 256)) || die "ulimit -n"
bench_cluster
bq "ALTER SYSTEM SET max_connections = $((N + 100))" >/dev/null
cluster_restart "$BTMP/pg"
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
bq "SELECT count(tide.register_node('pb-' || i, 'cpu=64, memory=256Gi', labels => jsonb_build_object('host', 'pb-' || i)))
      FROM generate_series(1, $N) i" >/dev/null || die "register nodes"

BPORT=$((PGPORT + 1))
PGB=$BTMP/pgb
mkdir -p "$PGB"
chown postgres: "$PGB"
cat >"$BTMP/pgbouncer.ini" <<INI
[databases]
$BENCH_DB = host=$PGHOST port=$PGPORT dbname=$BENCH_DB user=postgres
[pgbouncer]
listen_addr =
unix_socket_dir = $PGB
listen_port = $BPORT
auth_type = trust
auth_file = $PGB/users.txt
pool_mode = transaction
default_pool_size = $POOL
max_client_conn = $((N + 100))
max_db_connections = $POOL
logfile = $PGB/pgbouncer.log
pidfile = $PGB/pgbouncer.pid
INI
echo '"postgres" ""' >"$PGB/users.txt"
chown postgres: "$BTMP/pgbouncer.ini" "$PGB/users.txt"

# pss_mb: summed Pss of the server's client backends, in MB
pss_mb() {
    local pid s=0
    for pid in $(bq "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"); do
        s=$((s + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)))
    done
    echo $((s / 1024))
}
commits() { bq "SELECT xact_commit FROM pg_stat_database WHERE datname = '$BENCH_DB'"; }

run_mode() {
    local mode=$1 dsn i lat extra=()
    if [ "$mode" = direct ]; then
        dsn="dbname=$BENCH_DB host=$PGHOST port=$PGPORT user=postgres"
    else
        extra=(--no-listen)   # a transaction pooler cannot carry LISTEN
        runuser -u postgres -- pgbouncer -d "$BTMP/pgbouncer.ini" || die "pgbouncer did not start"
        dsn="dbname=$BENCH_DB host=$PGB port=$BPORT user=postgres"
    fi
    LAUNCHERS=()
    for i in $(seq "$N"); do
        "$PG_BIN/tide-launcher" --node "pb-$i" --dsn "$dsn" --state-dir "$BSTATE/state-$mode-$i" \
            --poll-interval "$POLL" --heartbeat-interval 10 --quiet "${extra[@]}" 2>>"$BTMP/launcher-$mode.log" &
        LAUNCHERS+=($!)
    done
    for _ in $(seq 120); do
        [ "$(grep -c 'event=connected' "$BTMP/launcher-$mode.log" 2>/dev/null)" -ge "$N" ] && break
        sleep 1
    done
    sleep 5
    local c0 c1 backends mem
    backends=$(bq "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
    mem=$(pss_mb)
    c0=$(commits); sleep 10; c1=$(commits)
    echo "$mode: $N launchers connected ($(grep -c 'event=connected' "$BTMP/launcher-$mode.log") connects logged):" \
         "$backends server backends, Pss $mem MB in all, idle load $(( (c1 - c0) / 10 )) transactions/s"
    for i in $(seq "$ROUNDS"); do
        local node=$(( 1 + RANDOM % N ))
        bq "SELECT tide.submit('bench', 'cpu=1', command => 'true', node_selector => '{\"host\": \"pb-$node\"}')" >/dev/null
        bq "SELECT tide.run_cycle()" >/dev/null
        for _ in $(seq 100); do
            [ "$(bq "SELECT count(*) FROM tide.allocations WHERE started_at IS NULL")" = 0 ] && break
            sleep 0.1
        done
    done
    lat=$(bq "SELECT format('p50 %s ms, p90 %s ms, max %s ms (%s jobs)',
                            round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)), round(percentile_cont(0.9) WITHIN GROUP (ORDER BY l)),
                            round(max(l)), count(*))
                FROM (SELECT extract(epoch FROM a.started_at - c.finished_at) * 1000 AS l
                        FROM tide.allocations a JOIN tide.cycles c ON c.id = a.cycle_id
                       WHERE a.node LIKE 'pb-%') s")
    echo "$mode: cycle end to started_at: $lat"
    for i in "${LAUNCHERS[@]}"; do kill "$i" 2>/dev/null; done
    for i in "${LAUNCHERS[@]}"; do wait "$i" 2>/dev/null; done
    LAUNCHERS=()
    [ "$mode" = pgbouncer ] && kill "$(cat "$PGB/pgbouncer.pid")"
    bq "DELETE FROM tide.jobs" >/dev/null
}
run_mode direct
run_mode pgbouncer
echo "pgbouncer log: $(grep -c 'ERROR\|WARNING' "$PGB/pgbouncer.log") ERROR or WARNING lines; launcher lines with error: direct $(grep -ci error "$BTMP/launcher-direct.log"), pgbouncer $(grep -ci error "$BTMP/launcher-pgbouncer.log")"
echo "machine: $(machine)"
