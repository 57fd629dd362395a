#!/usr/bin/env bash
# Soak: 16 submitters through pgbench (tide.submit, RATE jobs/s in all),
# cycles every second by tide.schedule_cycles (pg_cron), 32 real launchers
# on fake nodes of 4 GPUs, for MINUTES; jobs of one GPU that run 1 to 4 s.
# Checks the invariants every 30 s (lib.bash: ev_invariants) and at the
# end, then reports lost jobs (acknowledged by pgbench but missing or not
# finished), commands started twice, and the latency from submission to
# start (first started_at - created_at) in percentiles.
#
#   bash test/evidence/soak.sh              # short form: 30 seconds
#   bash test/evidence/soak.sh --long       # 30 minutes
#   MINUTES=10 RATE=20 bash test/evidence/soak.sh
. "$(dirname "$0")/lib.bash"
SECS=$(( ${MINUTES:-0} * 60 ))
[ "$SECS" -gt 0 ] || SECS=30
[ "${1:-}" = --long ] && SECS=$(( ${MINUTES_LONG:-30} * 60 ))
RATE=${RATE:-20}
NODES=${NODES:-32}

ev_cluster
ev_nodes "$NODES" 4
q "CREATE EXTENSION pg_cron" >/dev/null || die "CREATE EXTENSION pg_cron"
q "SELECT tide.schedule_cycles('1 second')" >/dev/null || die "schedule_cycles"
# pg_cron starts the cycle loop at the next minute: bridge until then
psql -qX -d "$EV_DB" -c "CALL tide.cycle_loop('1 second')" >/dev/null 2>&1 &
for s in 1 2 4; do
    printf "SELECT tide.submit('ev', 'cpu=1, gpu=1', command => \$c\$%s\$c\$);\n" "$(ev_command "$s")" >"$EV/submit-$s.sql"
done
sleep 2
say "soak: $SECS s, 16 submitters at $RATE jobs/s in all, $NODES launchers"
pgbench -n -c 16 -j 2 -R "$RATE" -T "$SECS" -f "$EV/submit-1.sql" -f "$EV/submit-2.sql" -f "$EV/submit-4.sql" \
    "$EV_DB" >"$EV/pgbench.out" 2>&1 &
bench=$!
bad=0
checks=0
while kill -0 "$bench" 2>/dev/null; do
    sleep "$(( SECS < 30 ? SECS : 30 ))"
    out=$(ev_invariants)
    checks=$((checks + 1))
    [ "$(awk '{s += $2} END {print s + 0}' <<<"$out")" = 0 ] || { bad=$((bad + 1)); echo "violations: $(tr '\n' ' ' <<<"$out")"; }
done
wait "$bench"
acked=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$EV/pgbench.out")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$EV/pgbench.out")
# everything submitted must finish (the backlog drains at the cadence)
end=$(($(date +%s) + 120))
while [ "$(q "SELECT count(*) FROM tide.jobs WHERE state NOT IN ('succeeded', 'failed', 'cancelled')")" != 0 ] \
      && [ "$(date +%s)" -lt "$end" ]; do sleep 0.3; done
final=$(ev_invariants)
[ "$(awk '{s += $2} END {print s + 0}' <<<"$final")" = 0 ] || bad=$((bad + 1))
jobs=$(q "SELECT count(*) FROM tide.jobs")
unfinished=$(q "SELECT count(*) FROM tide.jobs WHERE state <> 'succeeded'")
double=$(sort "$EV/starts" | uniq -d | wc -l)
lost=$(( ${acked:-0} - jobs ))
[ "$lost" -lt 0 ] && lost=0
lat=$(q "SELECT format('p50 %s s, p90 %s s, p99 %s s, max %s s',
                       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)::numeric, 3),
                       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY l)::numeric, 3),
                       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 3),
                       round(max(l)::numeric, 3))
           FROM (SELECT extract(epoch FROM min(a.started_at) - j.created_at) AS l
                   FROM tide.jobs j JOIN tide.allocations a ON a.job_id = j.id GROUP BY j.id, j.created_at) s")
cycles=$(q "SELECT format('%s cycles, mean %s ms, max %s ms', count(*),
                          round(avg(extract(epoch FROM finished_at - started_at) * 1000)::numeric, 1),
                          round(max(extract(epoch FROM finished_at - started_at) * 1000)::numeric, 1))
              FROM tide.cycles WHERE finished_at IS NOT NULL")
echo "final invariants: $(tr '\n' ' ' <<<"$final")"
echo "latency submit to start: $lat; $cycles"
fail=0
[ "$bad" = 0 ] && [ "$lost" = 0 ] && [ "$unfinished" = 0 ] && [ "$double" = 0 ] && [ "${failed:-0}" = 0 ] || fail=1
echo "soak: $SECS s, $acked jobs acknowledged ($failed failed submissions), $jobs in tide.jobs, $lost lost," \
     "$unfinished not succeeded, $double commands started twice, invariant checks $checks with $bad failing" \
     "-> $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
