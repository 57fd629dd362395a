#!/usr/bin/env bash
# Submit-to-started latency with pg_cron's 1-second cadence: jobs arrive at
# a steady rate; each job's latency is the first `started` report of its
# allocations minus its `created_at`.  4 nodes x 8 GPUs, one launcher each,
# 1-GPU jobs that sleep 0.5 s (the cluster never fills).
#
#   bash bench/launcher_latency.sh [RATE=10 jobs/s] [SECONDS=60]
#
# Prints p50, p90, p99 and max.  Targets: p50 <= 0.7 s,
# p99 <= 1.5 s.  Results: docs/benchmarks.md.
. "$(dirname "$0")/launcher_lib.bash"
RATE=${1:-10}
DURATION=${2:-60}

bench_cluster
bq "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null || die "pg_cron must serve $BENCH_DB"
bq "INSERT INTO tide.queues (name) VALUES ('bench')" >/dev/null
nodes=()
for i in 1 2 3 4; do
    nodes+=("lat-$i")
    bq "SELECT tide.register_node('lat-$i', 'cpu=96, memory=768Gi, gpu=8', gpu_topology => '{0,0,0,0,1,1,1,1}')" >/dev/null
    bench_launcher "lat-$i"
done
wait_connected "${nodes[@]}"
bq "SELECT tide.schedule_cycles('1 second')" >/dev/null || die "schedule_cycles failed"
# pg_cron < 1.5 starts the cycle loop at the next minute: until then, run the
# same loop from here (cycles never overlap), so the measurement can start now
if [ "$(bq "SELECT schedule FROM cron.job WHERE jobname = tide.cron_job_name()")" = '* * * * *' ]; then
    secs=$(bq "SELECT 62 - floor(extract(second FROM clock_timestamp()))::int")
    psql -qAtX -d "$BENCH_DB" -c "CALL tide.cycle_loop('1 second', '$secs seconds')" >/dev/null 2>&1 &
fi
for _ in $(seq 70); do
    [ "$(bq "SELECT count(*) > 0 FROM tide.cycles")" = t ] && break
    sleep 0.2
done

say "submitting $RATE jobs/s for $DURATION s"
n=$((RATE * DURATION))
gap=$(awk -v r="$RATE" 'BEGIN { printf "%.4f", 1 / r }')
{
    for i in $(seq "$n"); do
        echo "SELECT tide.submit('bench', 'cpu=1, gpu=1', command => 'sleep 0.5');"
        echo "SELECT pg_sleep($gap);"
    done
} | psql -qAtX -d "$BENCH_DB" >/dev/null

end=$(($(date +%s) + 60))
while [ "$(bq "SELECT count(*) FROM tide.jobs WHERE state NOT IN ('succeeded', 'failed', 'cancelled')")" != 0 ]; do
    [ "$(date +%s)" -ge "$end" ] && { say "some jobs did not finish"; break; }
    sleep 0.5
done
bq "SELECT tide.unschedule_cycles()" >/dev/null
bq "WITH l AS (SELECT extract(epoch FROM min(a.started_at) - j.created_at) AS s
                 FROM tide.jobs j JOIN tide.allocations a ON a.job_id = j.id GROUP BY j.id, j.created_at)
    SELECT format('rate=%s/s for %s s, %s jobs: submit to started p50 %s s, p90 %s s, p99 %s s, max %s s',
                  $RATE, $DURATION, count(*),
                  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s)::numeric, 3),
                  round(percentile_cont(0.9) WITHIN GROUP (ORDER BY s)::numeric, 3),
                  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY s)::numeric, 3),
                  round(max(s)::numeric, 3))
      FROM l"
bq "SELECT format('cycles: %s, mean %s ms, max %s ms', count(*),
                  round(avg(extract(epoch FROM finished_at - started_at)) * 1000, 1),
                  round(max(extract(epoch FROM finished_at - started_at)) * 1000, 1)) FROM tide.cycles"
echo "machine: $(machine)"
