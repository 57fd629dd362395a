#!/usr/bin/env bash
# How many starts per second can launchers sustain?  No-op commands
# (`true`), K launchers (one per node), N allocations made ready at once by
# one real cycle (tide.run_cycle(); its insert trigger NOTIFYs each node
# once at commit).  BENCH_PLACE=direct writes the placement itself instead,
# following the cycle's protocol (for schemas without tide.run_cycle()).
# The clock starts when the placing transaction has committed, so the
# number measures launchers, not the cycle (whose time is printed apart).
#
#   bash bench/launcher_throughput.sh [N=20000] [K=2]
#   BENCH_LAUNCHER_OPTS=--no-shepherd bash bench/launcher_throughput.sh
#   BENCH_LAUNCHER_BIN=/tmp/old/tide-launcher bash bench/launcher_throughput.sh
#
# Prints seconds from the commit to the last `started` report and to the
# last `exited` report, and the rates.  Results: docs/benchmarks.md.
. "$(dirname "$0")/launcher_lib.bash"
N=${1:-20000}
K=${2:-2}

bench_cluster
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
nodes=()
# Each node holds exactly its share: the cycle packs nodes, so a larger
# capacity would put every job on the first node.
for i in $(seq "$K"); do
    nodes+=("bench-$i")
    bq "SELECT tide.register_node('bench-$i', 'cpu=$(( (N + K - 1) / K )), memory=1Pi')" >/dev/null
done
start_launchers() {
    for node in "${nodes[@]}"; do bench_launcher "$node"; done
    wait_connected "${nodes[@]}"
}
# BENCH_ANALYZE=1: place first, ANALYZE as autovacuum would soon after a
# burst, then start the launchers and the clock (without it, the first
# reports are planned with the statistics of empty tables).
[ -n "${BENCH_ANALYZE:-}" ] || start_launchers
bq "SELECT count(tide.submit('bench', 'cpu=1', command => 'true')) FROM generate_series(1, $N)" >/dev/null \
    || die "submit failed"

PLACE=${BENCH_PLACE:-cycle}
[ "$(bq "SELECT to_regprocedure('tide.run_cycle()') IS NOT NULL")" = t ] || PLACE=direct
say "placing $N no-op jobs on $K nodes ($PLACE)"
if [ "$PLACE" = cycle ]; then
t0=$(psql -qAtX -v ON_ERROR_STOP=1 -d "$BENCH_DB" <<SQL
SELECT tide.run_cycle() \g /dev/null
SELECT clock_timestamp();
SQL
) || die "cycle failed"
bq "SELECT format('cycle: placed %s jobs in %s ms', jobs_placed,
                  round(extract(epoch FROM finished_at - started_at)::numeric * 1000))
      FROM tide.cycles ORDER BY id DESC LIMIT 1"
[ "$(bq "SELECT count(*) FROM tide.allocations")" = "$N" ] || die "the cycle placed $(bq "SELECT count(*) FROM tide.allocations") of $N"
else
t0=$(psql -qAtX -v ON_ERROR_STOP=1 -d "$BENCH_DB" <<SQL
BEGIN;
SELECT pg_advisory_xact_lock(tide._cycle_lock_key()) \g /dev/null
INSERT INTO tide.cycles DEFAULT VALUES RETURNING id AS cycle \gset
SELECT set_config('tide.cycle_id', :'cycle', true) \g /dev/null
UPDATE tide.jobs SET state = 'allocated', pending_reason = NULL WHERE state = 'pending';
INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, cycle_id)
SELECT j.id, t.role, 0, format('bench-%s', 1 + (row_number() OVER (ORDER BY j.id)) % $K), t.request, '', :cycle
  FROM tide.jobs j JOIN tide.job_tasks t ON t.job_id = j.id;
UPDATE tide.cycles SET finished_at = clock_timestamp(), jobs_placed = $N WHERE id = :cycle;
SELECT clock_timestamp();
COMMIT;
SQL
) || die "placement failed"
fi

if [ -n "${BENCH_ANALYZE:-}" ]; then
    bq "ANALYZE tide.allocations; ANALYZE tide.jobs" >/dev/null
    t0=$(bq "SELECT clock_timestamp()")
    start_launchers
fi

end=$(($(date +%s) + 600))
while [ "$(bq "SELECT count(*) FROM tide.allocations WHERE state = 'released'")" != "$N" ]; do
    [ "$(date +%s)" -ge "$end" ] && die "not finished after 600 s"
    sleep 0.5
done
bq "SELECT format('N=%s K=%s: all started after %s s (%s starts/s); all exited after %s s (%s/s)',
                  $N, $K,
                  round(extract(epoch FROM max(started_at) - '$t0')::numeric, 2),
                  round($N / extract(epoch FROM max(started_at) - '$t0')::numeric),
                  round(extract(epoch FROM max(released_at) - '$t0')::numeric, 2),
                  round($N / extract(epoch FROM max(released_at) - '$t0')::numeric))
      FROM tide.allocations"
echo "machine: $(machine)"
