#!/usr/bin/env bash
# Many launcher connections on one server: for each N given (default 1000
# and 2000), a throwaway PostgreSQL 15 with max_connections raised, N nodes
# (label host = name), and bench/listeners.c holding N idle connections that
# LISTEN on their nodes' channels.  Prints the listeners' memory, how many
# backends one NOTIFY wakes, NOTIFY-to-wakeup latency at both ends of the
# listener list, and a real tide.run_cycle() placing one job on the far node
# with the time to that node's claim.  The first size (1, by default) is the
# baseline: the same nodes, one listener.
#
#   flock -o /tmp/pg_tide_install.lock bash -c 'make install && bash bench/listeners.sh 1 1000 2000'
#
# Results: docs/benchmarks.md ("Submitters and launchers at scale").
. "$(dirname "$0")/launcher_lib.bash"
# BENCH_PG_BIN: the bin directory of another PostgreSQL installation (e.g.
# a private copy with this build installed, which needs no install lock)
PG_BIN=${BENCH_PG_BIN:-$PG_BIN}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1 1000 2000)
ROUNDS=${BENCH_ROUNDS:-20}
max=0
for n in "${SIZES[@]}"; do [ "$n" -gt "$max" ] && max=$n; done

BIN=$BTMP/listeners
cc -O2 -I"$($PG_BIN/pg_config --includedir)" "$SRC/bench/listeners.c" \
    -L"$($PG_BIN/pg_config --libdir)" -lpq -o "$BIN" || die "cannot build bench/listeners.c"
ulimit -n $((max + 256)) || die "ulimit -n $((max + 256)) refused"

bench_cluster
# room for the listeners, the control connection, pg_cron and autovacuum
bq "ALTER SYSTEM SET max_connections = $((max + 50))" >/dev/null
cluster_restart "$BTMP/pg"
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
bq "SELECT count(tide.register_node('ln-' || i, 'cpu=64, memory=256Gi', labels => jsonb_build_object('host', 'ln-' || i)))
      FROM generate_series(1, $max) i" >/dev/null || die "register nodes"
free_mb() { awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo; }

for n in "${SIZES[@]}"; do
    say "$n listeners on $max nodes"
    before=$(free_mb)
    "$BIN" "dbname=$BENCH_DB" "$n" "$ROUNDS" --cycle &
    pid=$!
    # memory seen by the machine while the listeners are connected
    for _ in $(seq 600); do
        grep -q . "$BTMP/mem.$n" 2>/dev/null && break
        if [ "$(bq "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND query LIKE 'LISTEN%'")" -ge "$n" ]; then
            echo "machine: MemAvailable fell by $((before - $(free_mb))) MB with $n listeners connected" >"$BTMP/mem.$n"
        fi
        sleep 0.5
    done
    wait "$pid" || die "listeners $n failed"
    cat "$BTMP/mem.$n"
done
echo "machine: $(machine)"
