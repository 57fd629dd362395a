#!/usr/bin/env bash
# tide.submit_array: how long one call takes to submit an array (R-P5),
# beside tide.submit_many of as many jobs, and what a cycle pays for the
# members kept back by max_running (nothing: they are not loaded).
#
#   bash bench/submit_array.sh            (own throwaway server, as root)
#   PGHOST=... PGPORT=... bash bench/submit_array.sh
#
# BENCH_SIZES: array sizes (default "10000 100000"); BENCH_ROUNDS (3).
# Results: docs/benchmarks.md ("Job arrays").
. "$(dirname "$0")/launcher_lib.bash"
SIZES=${BENCH_SIZES:-"10000 100000"}
R=${BENCH_ROUNDS:-3}

bench_cluster
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
bq "SELECT tide.register_node('b' || i, 'cpu=64, memory=256Gi, gpu=8') FROM generate_series(1, 16) i" >/dev/null

# milliseconds of one statement, the clock read inside the server
ms() {
    bq "DO \$\$ DECLARE t timestamptz := clock_timestamp(); BEGIN PERFORM $1; RAISE NOTICE '%',
        round(extract(epoch FROM clock_timestamp() - t)::numeric * 1000, 1); END \$\$" 2>&1 | sed 's/.*NOTICE: *//'
}

printf 'size,round,submit_array_ms,submit_many_ms,cycle_ms,cycle_considered\n'
for n in $SIZES; do
    for r in $(seq 1 "$R"); do
        a=$(ms "tide.submit_array('bench', 'gpu=1', $n, 8, command => 'true')")
        m=$(ms "tide.submit_many('bench', array_fill('gpu=1'::tide.resvec, ARRAY[$n]))")
        # a cycle with the array and the batch pending: only 8 members are loaded
        bq "DELETE FROM tide.jobs WHERE array_id IS NULL AND state = 'pending'" >/dev/null
        c=$(ms "tide.run_cycle()")
        k=$(bq "SELECT jobs_considered FROM tide.cycles ORDER BY id DESC LIMIT 1")
        printf '%s,%s,%s,%s,%s,%s\n' "$n" "$r" "$a" "$m" "$c" "$k"
        bq "TRUNCATE tide.jobs, tide.job_tasks, tide.allocations, tide.evictions, tide.eviction_holds,
                     tide.job_events, tide.job_dependencies, tide.job_arrays, tide.reason_backlog" >/dev/null
    done
done
