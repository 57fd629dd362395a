#!/usr/bin/env bash
# kill -9 of the postmaster under load, with real launchers, again and
# again.  Submitters (tide.submit, one job a call, each acknowledged id
# noted) and a cycle every 0.3 s keep 4 nodes x 4 fake GPUs busy with jobs
# of 0.2 to 3 s; every few seconds the postmaster is killed with SIGKILL
# and started again.  After every restart the invariants are checked
# (lib.bash: ev_invariants: no GPU shared or over-used, job and allocation
# states agree, released once and for good, no command started twice);
# at the end, with submissions stopped, every acknowledged job must finish
# and have succeeded.
#
#   bash test/evidence/kill_loop.sh            # short form: 4 kills (about 40 s)
#   bash test/evidence/kill_loop.sh --long     # 100 kills (about 15 minutes)
#   KILLS=32 bash test/evidence/kill_loop.sh
#
# Exit status 0 when every check held; the last line sums it up.
. "$(dirname "$0")/lib.bash"
KILLS=${KILLS:-4}
[ "${1:-}" = --long ] && KILLS=${KILLS_LONG:-100}

ev_cluster
ev_nodes 4 4
for s in 0.2 1 3; do
    ev_submitter "$s" "$EV/acked.$s" &
    EV_PIDS+=($!)
done
ev_cycler 0.3 &
EV_PIDS+=($!)
sleep 3

bad=0
restarts=0
t0=$(date +%s)
for k in $(seq "$KILLS"); do
    sleep "$(( 1 + RANDOM % 3 )).$(( RANDOM % 10 ))"
    born=$(q "SELECT pg_postmaster_start_time()" 2>/dev/null)
    ev_crash || die "the server did not come back after kill $k"
    sleep 1
    [ "$(q "SELECT pg_postmaster_start_time()")" != "$born" ] && restarts=$((restarts + 1))
    out=$(ev_invariants)
    n=$(awk '{s += $2} END {print s + 0}' <<<"$out")
    if [ "$n" != 0 ]; then
        bad=$((bad + 1))
        echo "kill $k: violations: $(tr '\n' ' ' <<<"$out")"
    fi
    [ $((k % 10)) = 0 ] && echo "kill $k of $KILLS: invariants held after each so far: $([ $bad = 0 ] && echo yes || echo no)"
done
loop_s=$(( $(date +%s) - t0 ))

# stop submitting, let everything acknowledged finish
for p in "${EV_PIDS[@]:0:3}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
cat "$EV"/acked.* >"$EV/acked"
acked=$(wc -l <"$EV/acked")
left=$(ev_drain "$EV/acked" 180)
final=$(ev_invariants)
missing=$(q "SELECT count(*) FROM unnest('{$(paste -sd, "$EV/acked")}'::bigint[]) i WHERE NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = i)")
notok=$(q "SELECT count(*) FROM tide.jobs j WHERE j.id = ANY ('{$(paste -sd, "$EV/acked")}'::bigint[]) AND j.state <> 'succeeded'")
starts=$(wc -l <"$EV/starts")
allocs=$(q "SELECT count(*) FROM tide.allocations")
echo "final invariants: $(tr '\n' ' ' <<<"$final")"
q "SELECT state, state_reason, count(*) FROM tide.jobs WHERE id = ANY ('{$(paste -sd, "$EV/acked")}'::bigint[]) AND state <> 'succeeded' GROUP BY 1, 2" | head -5
fail=0
[ "$bad" = 0 ] || fail=1
[ "$left" = 0 ] && [ "$missing" = 0 ] && [ "$notok" = 0 ] || fail=1
[ "$(awk '{s += $2} END {print s + 0}' <<<"$final")" = 0 ] || fail=1
[ "$restarts" = "$KILLS" ] || fail=1
echo "kill_loop: $KILLS kills ($restarts restarts seen) in ${loop_s} s; $acked jobs acknowledged, $missing lost, $left unfinished, $notok not succeeded;" \
     "$starts command starts for $allocs allocations; restarts with violations: $bad -> $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
