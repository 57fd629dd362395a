#!/usr/bin/env bash
# Recovery after a crash storm: a backlog of mixed jobs on 8 nodes x 8 fake
# GPUs with real launchers and cycles every second from pg_cron
# (tide.schedule_cycles), a steady window to measure the drain, then
# several kill -9 of the postmaster in a row (the last early in a minute),
# then a window after the last restart.  For each window it reports the
# jobs started per minute and the mean share of the GPUs held by running
# work while jobs wait; every few seconds it prints what the cluster looks
# like (cycles and what each placed, jobs running, pending and finished,
# allocations and nodes by state, GPUs held, eviction holds).
#
#   bash test/evidence/drain.sh           # 300 jobs, 2 kills, 30 s windows
#   bash test/evidence/drain.sh --long    # 1,000 jobs, 5 kills, 90 s windows
#
# It fails when the share of GPUs busy after the last restart is under
# MIN_RATIO (0.7) of the share before the storm, or when the first cycle
# after the last restart comes later than MAX_FIRST (10) seconds.
# Knobs: JOBS, KILLS, WINDOW (seconds), MIN_RATIO, MAX_FIRST, SHAPES=mixed|one
# (the mix above, or only one-GPU jobs of 1 to 4 s), CYCLER=cron|loop
# (pg_cron, the default, or a shell loop calling tide.run_cycle() every
# second).
. "$(dirname "$0")/lib.bash"
JOBS=${JOBS:-300}
KILLS=${KILLS:-2}
WINDOW=${WINDOW:-30}
if [ "${1:-}" = --long ]; then JOBS=${JOBS_LONG:-1000}; KILLS=${KILLS_LONG:-5}; WINDOW=${WINDOW_LONG:-90}; fi
MIN_RATIO=${MIN_RATIO:-0.7}
MAX_FIRST=${MAX_FIRST:-10}
CYCLER=${CYCLER:-cron}
SHAPES=${SHAPES:-mixed}

ev_cluster
ev_nodes 8 8
# The backlog: mostly one-GPU jobs, some of 2, 4 and 8 GPUs, gangs of
# 2 x 4 and 4 x 8 GPUs; half with a time limit; 4 to 12 s of work each.
q "DO \$\$
DECLARE i int; r float8; req text; reps int; secs int;
BEGIN
    PERFORM setseed(0.42);
    FOR i IN 1 .. $JOBS LOOP
        r := CASE WHEN '$SHAPES' = 'one' THEN 0 ELSE random() END;
        reps := 1;
        req := CASE WHEN r < 0.50 THEN 'cpu=1, gpu=1'
                    WHEN r < 0.70 THEN 'cpu=1, gpu=2'
                    WHEN r < 0.80 THEN 'cpu=1, gpu=4'
                    WHEN r < 0.88 THEN 'cpu=1, gpu=8'
                    WHEN r < 0.95 THEN 'cpu=1, gpu=4'
                    ELSE 'cpu=1, gpu=8' END;
        IF r >= 0.88 THEN reps := CASE WHEN r < 0.95 THEN 2 ELSE 4 END; END IF;
        secs := CASE WHEN '$SHAPES' = 'one' THEN 1 + (random() * 3)::int ELSE 4 + (random() * 8)::int END;
        PERFORM tide.submit('ev', req::tide.resvec, replicas => reps,
                            time_limit => CASE WHEN i % 2 = 0 THEN interval '10 minutes' END,
                            command => format(\$c\$echo \$TIDE_ALLOCATION_ID >> %s; sleep %s\$c\$, '$EV/starts', secs));
    END LOOP;
END \$\$" >/dev/null || die "submitting the backlog"

start_cycles() {
    if [ "$CYCLER" = cron ]; then
        q "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null || die "CREATE EXTENSION pg_cron"
        q "SELECT tide.schedule_cycles('1 second')" >/dev/null || die "schedule_cycles"
        # pg_cron 1.4 starts the loop at the next whole minute: bridge until then
        psql -qX -d "$EV_DB" -c "CALL tide.cycle_loop('1 second')" >/dev/null 2>&1 &
    else
        ev_cycler 1 &
        EV_PIDS+=($!)
    fi
}
start_cycles

# One line of what the cluster looks like.
snapshot() {
    q "SELECT format('cycles %s (placed %s, last %s s ago) | jobs running %s pending %s done %s | allocs %s | nodes %s | GPUs held %s of 64 | eviction holds %s',
        (SELECT count(*) FROM tide.cycles WHERE started_at > now() - interval '5 seconds'),
        (SELECT coalesce(string_agg(jobs_placed::text, ',' ORDER BY id), '') FROM tide.cycles WHERE started_at > now() - interval '5 seconds'),
        (SELECT round(extract(epoch FROM now() - max(started_at))::numeric, 1) FROM tide.cycles),
        (SELECT count(*) FROM tide.jobs WHERE state = 'running'),
        (SELECT count(*) FROM tide.jobs WHERE state = 'pending'),
        (SELECT count(*) FROM tide.jobs WHERE state IN ('succeeded', 'failed', 'cancelled')),
        (SELECT coalesce(string_agg(s || '=' || n, ' ' ORDER BY s), '') FROM (SELECT state::text s, count(*) n FROM tide.allocations WHERE state <> 'released' GROUP BY 1) x),
        (SELECT string_agg(s || '=' || n, ' ' ORDER BY s) FROM (SELECT state::text s, count(*) n FROM tide.nodes GROUP BY 1) x),
        (SELECT coalesce(sum(tide.get(resources, 'gpu')), 0) FROM tide.allocations WHERE state <> 'released'),
        (SELECT count(*) FROM tide.eviction_holds))" 2>/dev/null
}

# Samples GPUs held by started work (allocations running) once a second
# for SECS, counting only the seconds when jobs wait (a backlog there to
# drain); prints the mean share of the 64 GPUs.
sample_util() {
    local secs=$1 i sum=0 n=0 v
    for i in $(seq "$secs"); do
        v=$(q "SELECT coalesce(sum(tide.get(resources, 'gpu')), 0) FROM tide.allocations WHERE state = 'running'
                HAVING EXISTS (SELECT 1 FROM tide.jobs WHERE state = 'pending')" 2>/dev/null)
        [ -n "$v" ] && { sum=$(awk -v s="$sum" -v v="$v" 'BEGIN {print s + v}'); n=$((n + 1)); }
        [ $((i % 5)) = 0 ] && echo "  $(date +%T) $(snapshot)" >&2
        sleep 1
    done
    awk -v s="$sum" -v n="$n" 'BEGIN {printf "%.2f", n ? s / n / 64 : 0}'
}

# Jobs whose first allocation started in [from, to) (epoch seconds).
started_between() {
    q "SELECT count(*) FROM (SELECT job_id FROM tide.allocations GROUP BY job_id
                             HAVING min(started_at) >= to_timestamp($1) AND min(started_at) < to_timestamp($2)) s"
}

# warm up: let the cluster fill, then measure the steady drain
sleep 10
b0=$(date +%s)
echo "before the storm ($WINDOW s):"
util_before=$(sample_util "$WINDOW" | tail -1)
b1=$(date +%s)
started_before=$(started_between "$b0" "$b1")

for k in $(seq "$KILLS"); do
    if [ "$k" = "$KILLS" ]; then
        # the last crash early in a minute: pg_cron 1.4 starts its cycle
        # loop at whole minutes, so this is when a restart costs the most
        while :; do
            s=$(date +%S); s=${s#0}
            [ "$s" -ge 3 ] && [ "$s" -le 15 ] && break
            sleep 0.5
        done
    fi
    ev_crash || die "the server did not come back after kill $k"
    echo "kill $k: restarted at $(date +%T)"
    [ "$k" -lt "$KILLS" ] && sleep "$(( 2 + RANDOM % 3 ))"
done
# the cadence as an operator left it: pg_cron's job survives the restart
a0=$(date +%s)
echo "after the last restart ($WINDOW s):"
util_after=$(sample_util "$WINDOW" | tail -1)
a1=$(date +%s)
started_after=$(started_between "$a0" "$a1")
first_cycle=$(q "SELECT coalesce(round(extract(epoch FROM min(started_at) - to_timestamp($a0))::numeric, 1)::text, 'none')
                   FROM tide.cycles WHERE started_at >= to_timestamp($a0)")
first_place=$(q "SELECT coalesce(round(extract(epoch FROM min(created_at) - to_timestamp($a0))::numeric, 1)::text, 'none')
                   FROM tide.allocations WHERE created_at >= to_timestamp($a0)")

rate_before=$(awk -v n="$started_before" -v s=$((b1 - b0)) 'BEGIN {printf "%.0f", n * 60 / s}')
rate_after=$(awk -v n="$started_after" -v s=$((a1 - a0)) 'BEGIN {printf "%.0f", n * 60 / s}')
echo "pending reasons now:"
q "SELECT coalesce(pending_reason, '(none)'), count(*) FROM tide.jobs WHERE state = 'pending' GROUP BY 1 ORDER BY 2 DESC LIMIT 5"
out=$(ev_invariants)
viol=$(awk '{s += $2} END {print s + 0}' <<<"$out")
fail=0
# The backlog that is left after the storm holds more of the big jobs (the
# small ones backfill first), so jobs per minute falls even when every GPU
# is busy: the share of GPUs busy is what must hold up.
awk -v a="$util_after" -v b="$util_before" -v m="$MIN_RATIO" 'BEGIN {exit !(b > 0 && a >= m * b)}' || fail=1
[ "$first_cycle" != none ] && awk -v f="$first_cycle" -v m="$MAX_FIRST" 'BEGIN {exit !(f <= m)}' || fail=1
[ "$viol" = 0 ] || { fail=1; echo "violations: $(tr '\n' ' ' <<<"$out")"; }
echo "drain: $JOBS jobs, $KILLS kills; before: $rate_before jobs/min, GPUs $util_before busy;" \
     "after the last restart: $rate_after jobs/min, GPUs $util_after busy, first cycle after ${first_cycle} s," \
     "first placement after ${first_place} s; invariant violations $viol -> $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
