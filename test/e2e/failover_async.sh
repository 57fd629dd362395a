#!/usr/bin/env bash
# An asynchronous failover with real parts (R-C6, R-C7, R-C8): a primary
# and a streaming standby of their own, two real launchers on a multi-host
# connection string with target_session_attrs=read-write.  The standby is
# cut off (its walreceiver stopped), the primary goes on for a while
# (exits and cancels acknowledged, work placed and started, more than 32
# allocation ids used), then its postmaster is killed with SIGKILL and the
# standby promoted: what the primary acknowledged since the cut is lost,
# as with any asynchronous replication lag.  pg_tide does not promise
# those commits back (R-C6: use synchronous replication), but the nodes
# must come out consistent:
#  - the launchers reconnect within 2 s of the new primary taking writes;
#  - no ghost: every allocation the new primary counts running has its
#    command running (those whose exits or stops were lost are released);
#  - no orphan: every command still running has a live allocation there
#    (work the lost allocations started is stopped);
#  - ids the new primary hands out again are not taken for the old work;
#  - no GPU ever ran two commands at once (each command holds a lock on
#    each of its GPUs while it runs: gpu_job.bash).
. "$(dirname "$0")/lib.bash"
. "$TIDE_SRC/tools/lib.sh"
export PGUSER=postgres
export LC_ALL=C

P_DIR=$WORK/primary
S_DIR=$WORK/standby
P_PORT=$((PGPORT + 111))
S_PORT=$((PGPORT + 112))
own_primary "$P_DIR" "$P_PORT" "shared_preload_libraries = 'pg_tide'"

DB=tide_failover
qp() { psql -qAtX -v ON_ERROR_STOP=1 -h "$P_DIR" -p "$P_PORT" -d "$DB" -c "$1"; }
qs() { psql -qAtX -v ON_ERROR_STOP=1 -h "$S_DIR" -p "$S_PORT" -d "$DB" -c "$1"; }
createdb -h "$P_DIR" -p "$P_PORT" "$DB" || { echo "Bail out! createdb failed"; exit 1; }
qp "CREATE EXTENSION pg_tide" >/dev/null || { echo "Bail out! CREATE EXTENSION failed"; exit 1; }
qp "ALTER DATABASE $DB SET tide.retry_backoff = 0" >/dev/null
qp "INSERT INTO tide.queues (name) VALUES ('e2e')" >/dev/null
for n in f1 f2; do
    qp "SELECT tide.register_node('$n', 'cpu=64, memory=256Gi, gpu=4')" >/dev/null
done

: >"$WORK/events"
# submit COUNT [RUN_FOR]: one-GPU jobs; prints their ids
submit_jobs() {
    qp "SELECT string_agg(tide.submit('e2e', 'gpu=1', command => 'bash $TIDE_SRC/test/e2e/gpu_job.bash',
                                      env => jsonb_build_object('DIR', '$WORK', 'RUN_FOR', '${2:-600}'))::text, ' ')
          FROM generate_series(1, $1)"
}

# ---- the standby: asynchronous streaming ----
own_standby "$S_DIR" "$S_PORT" "$P_DIR" "$P_PORT"
caught_up() {
    local lsn got=""
    lsn=$(qp "SELECT pg_current_wal_lsn()")
    for _ in $(seq 100); do
        got=$(qs "SELECT pg_last_wal_replay_lsn() >= '$lsn'" 2>/dev/null)
        [ "$got" = t ] && break
        sleep 0.1
    done
    printf '%s' "$got"
}

# ---- before the cut: 8 long jobs run, 6 wait ----
DSN="host=$P_DIR,$S_DIR port=$P_PORT,$S_PORT dbname=$DB user=postgres target_session_attrs=read-write"
for n in f1 f2; do
    "$LAUNCHER" --node "$n" --dsn "$DSN" --state-dir "$WORK/state-$n" --poll-interval 1 \
        --heartbeat-interval 1 --grace-period 5 2>>"$WORK/launcher-$n.log" &
    LAUNCHER_PIDS+=($!)
done
long=$(submit_jobs 8)
qp "SELECT tide.run_cycle()" >/dev/null
waiting=$(submit_jobs 6 1)
got=""
for _ in $(seq 100); do
    got=$(qp "SELECT count(*) FROM tide.jobs WHERE state = 'running'")
    [ "$got" = 8 ] && break
    sleep 0.1
done
is "$got" 8 "8 jobs run on the two nodes' 8 GPUs"
is "$(caught_up)" t "the standby has caught up"

# ---- the cut: the standby stops streaming; the primary goes on ----
qs "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
qs "SELECT pg_reload_conf()" >/dev/null
got=""
for _ in $(seq 100); do
    got=$(qs "SELECT count(*) FROM pg_stat_wal_receiver")
    [ "$got" = 0 ] && break
    sleep 0.1
done
is "$got" 0 "the standby is cut off (no walreceiver)"
read -r -a L <<<"$long"
# two exits and two cancels, acknowledged by the primary only
touch "$WORK/stop.${L[0]}" "$WORK/stop.${L[1]}"
qp "SELECT tide.cancel(${L[2]}), tide.cancel(${L[3]})" >/dev/null
# churn: short jobs through the freed GPUs until more than 32 allocation
# ids were used since the cut (the sequence is WAL-logged 32 ahead)
first=$(qp "SELECT coalesce(max(id), 0) FROM tide.allocations")
submit_jobs 40 0 >/dev/null
for _ in $(seq 150); do
    qp "SELECT tide.run_cycle()" >/dev/null
    [ "$(qp "SELECT count(*) FROM tide.allocations WHERE id > $first")" -ge 36 ] && break
    sleep 0.2
done
used=$(qp "SELECT count(*) FROM tide.allocations WHERE id > $first")
ok "$([ "$used" -ge 36 ] && echo 0 || echo 1)" "the primary placed $used allocations after the cut"
# and a last wave of long work, started on the primary only
late=$(submit_jobs 4)
got=""
for _ in $(seq 100); do
    qp "SELECT tide.run_cycle()" >/dev/null
    got=$(qp "SELECT count(*) FROM tide.jobs WHERE id IN (${late// /,}) AND state = 'running'")
    [ "$got" = 4 ] && break
    sleep 0.2
done
is "$got" 4 "4 more jobs run, on the primary only"
last=$(qp "SELECT max(id) FROM tide.allocations")

# ---- the failover ----
ppid=$(head -1 "$P_DIR/data/postmaster.pid")
t_kill=$(date +%s.%N)
kill -KILL "$ppid"
for _ in $(seq 50); do pgrep -f "postgres.*$P_DIR" >/dev/null || break; sleep 0.1; done
pkill -KILL -f "postgres: .*$P_DIR" 2>/dev/null
pg_as "$PG_BIN/pg_ctl" -D "$S_DIR/data" -w -t 60 promote >/dev/null
t0=""
for _ in $(seq 200); do
    if [ "$(qs "SELECT NOT pg_is_in_recovery()" 2>/dev/null)" = t ]; then t0=$(date +%s.%N); break; fi
    sleep 0.05
done
ok "$([ -n "$t0" ] && echo 0 || echo 1)" "the standby is promoted and takes writes"

# the launchers' first statement on the new primary is tide.reconcile.
# The new primary took writes no later than this script saw it (t0, polled
# with psql: late on a loaded machine) nor than a launcher connected to it
# read-write (the first "connected" after the kill): the earlier of them.
log_after() {    # FILE REGEX EPOCH: the epoch of the first matching line after EPOCH
    grep -E "$2" "$1" | while read -r stamp _; do
        ts=$(date -d "$stamp" +%s.%N 2>/dev/null) || continue
        awk -v a="$ts" -v b="$3" 'BEGIN { exit !(a >= b) }' && { echo "$ts"; break; }
    done
}
for _ in $(seq 100); do
    [ -n "$(log_after "$WORK/launcher-f1.log" "event=reconcile known=" "$t_kill")" ] &&
        [ -n "$(log_after "$WORK/launcher-f2.log" "event=reconcile known=" "$t_kill")" ] && break
    sleep 0.1
done
t_rw=${t0:-9e18}
for n in f1 f2; do
    c=$(log_after "$WORK/launcher-$n.log" "event=connected" "$t_kill")
    [ -n "$c" ] && t_rw=$(awk -v a="$c" -v b="$t_rw" 'BEGIN { printf "%.6f", a < b ? a : b }')
done
for n in f1 f2; do
    t=$(log_after "$WORK/launcher-$n.log" "event=reconcile known=" "$t_kill")
    delay=$(awk -v a="${t:-0}" -v b="$t_rw" 'BEGIN { printf "%.2f", a - b }')
    echo "# $n reconciled with the new primary $delay s after it took writes"
    ok "$(awk -v d="$delay" -v t="${t:-x}" 'BEGIN { exit !(t != "x" && d <= 2.0) }' && echo 0 || echo 1)" \
        "launcher $n reconciles with the new primary within 2 s of its taking writes ($delay s)"
done

# the new primary's cycles go on; the nodes settle
live_procs() {
    # "JOB ALLOC" of every command that started and has not ended, and lives
    awk '$2 == "start" { s[$5] = $3 " " $4 } $2 == "end" { delete s[$5] }
         END { for (p in s) print p, s[p] }' "$WORK/events" |
        while read -r pid job alloc; do kill -0 "$pid" 2>/dev/null && echo "$job $alloc"; done | sort
}
running_allocs() {
    qs "SELECT job_id || ' ' || id FROM tide.allocations WHERE state = 'running' ORDER BY 1"
}
live_allocs() {
    qs "SELECT job_id || ' ' || id FROM tide.allocations WHERE state <> 'released' ORDER BY 1"
}
ghosts="" orphans=""
for _ in $(seq 60); do
    qs "SELECT tide.run_cycle()" >/dev/null 2>&1
    sleep 0.3
    procs=$(live_procs)
    ghosts=$(comm -23 <(running_allocs | sort) <(echo "$procs" | sort))
    orphans=$(comm -23 <(echo "$procs" | sed '/^$/d' | sort) <(live_allocs | sort))
    [ -z "$ghosts" ] && [ -z "$orphans" ] && break
done
is "$ghosts" "" "no ghost: every allocation running on the new primary has its command running"
is "$orphans" "" "no orphan: every command still running has a live allocation on the new primary"
reused=$(qs "SELECT count(*) FROM tide.allocations WHERE id > $first AND id <= $last")
echo "# the new primary made $reused allocations with ids the lost ones had used"
ok "$([ "$reused" -ge 1 ] && echo 0 || echo 1)" "ids were handed out again ($reused), and work still came out consistent"
echo "# the launchers said: $(cat "$WORK"/launcher-f*.log | grep -c 'event=gone') gone, $(cat "$WORK"/launcher-f*.log | grep -c 'event=fence') GPU fence waits, $(cat "$WORK"/launcher-f*.log | grep -c 'event=reconcile allocation') released by reconcile"
is "$(cat "$WORK"/overlaps 2>/dev/null)" "" "no GPU ran two commands at once"
like "$(cat "$WORK"/launcher-f*.log)" "event=gone alloc=" "the launchers stopped work the new primary does not have"
like "$(cat "$WORK"/launcher-f*.log)" "event=reconcile allocation [0-9]+ of job [0-9]+ was running on node f[12] in the database, but its launcher does not run it" \
    "and the new primary released work whose end it had lost"
is "$(qs "SELECT count(*) FROM tide.jobs WHERE state IN ('allocated', 'running') AND NOT EXISTS
            (SELECT 1 FROM tide.allocations a WHERE a.job_id = jobs.id AND a.state <> 'released')")" 0 \
    "every job the new primary counts at work has live allocations"
finish
