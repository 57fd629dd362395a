#!/usr/bin/env bash
# A supported HA setup, tested for real (R-C6, docs/ha.md): Debian 12's
# etcd and Patroni on loopback, two PostgreSQL 15 members in synchronous
# mode, pg_tide installed by the project's own steps, cycles scheduled with
# tide.schedule_cycles (pg_cron), four reference launchers with fake GPUs
# (4 each; 8 in the long form)
# and a submitter on a multi-host DSN with target_session_attrs=read-write.
# Under load, kill -9 of the leader's postmaster; then, each its own TAP
# line: every acknowledged job exists on the new leader as submitted, no
# command ran twice, no GPU ran two commands at once, cycles resume,
# launchers claim within 2 s of the new leader taking writes, the killed
# postmaster's processes go away, the old leader rejoins (pg_rewind) as the
# synchronous standby.  Then the same again from the other side.
#
# Runs with TIDE_HA=1 (two failovers, 5 submits a second, about two
# minutes) or TIDE_HA_LONG=1 (TIDE_HA_FAILOVERS failovers, default 6, 10
# submits a second, longer load); skipped otherwise: it installs Patroni
# and etcd and takes longer than the default run's budget.
# TIDE_HA_LAUNCHER_OPTS: extra launcher options (default: the launcher's
# own defaults, reconnection backoff included, as shipped).
# TIDE_HA_STALL=SECS: stop the leader's walsenders (SIGSTOP) that long
# before each kill, a replication stall; TIDE_HA_ASYNC=1: asynchronous
# replication (synchronous_mode: false), to measure what it loses
# (docs/ha.md): its failures are the point, not a regression.
. "$(dirname "$0")/lib.bash"
if [ -z "${TIDE_HA:-}" ] && [ -z "${TIDE_HA_LONG:-}" ]; then
    skip "Patroni failover test: run with TIDE_HA=1 or TIDE_HA_LONG=1 (docs/ha.md)"
    finish
fi
keep_bin=$PG_BIN
. "$TIDE_SRC/tools/lib.sh"
PG_BIN=$keep_bin
. "$TIDE_SRC/test/ha/lib.bash"
install_packages patroni etcd-server etcd-client curl python3-psycopg2

# load: about 80 % of the GPUs (commands of 1 to 3 s, a quarter on two GPUs)
if [ -n "${TIDE_HA_LONG:-}" ]; then
    FAILOVERS=${TIDE_HA_FAILOVERS:-6} RATE=10 LOAD=20 GPUS=8
else
    FAILOVERS=2 RATE=5 LOAD=6 GPUS=4
fi
bail() { echo "Bail out! $*"; exit 1; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }

STALL=${TIDE_HA_STALL:-0}
HA_SYNC=true
[ -n "${TIDE_HA_ASYNC:-}" ] && HA_SYNC=false
ha_init "$WORK/ha" $((PGPORT + 300)) tide_ha
T_START=$(now)
at_exit "ha_stop_all"
# on the leader whoever it is (the clients' DSN)
hq() { psql -qAtX -v ON_ERROR_STOP=1 -d "$HA_DSN" -c "$1"; }

# ---- etcd, then Patroni: m1 bootstraps, m2 clones and becomes the synchronous standby ----
t0=$(now)
ha_etcd_start || bail "etcd did not start: $(tail -5 "$HA_DIR/etcd.log")"
ha_patroni_start m1
leader=$(ha_wait_member primary 90) || bail "no leader: $(tail -5 "$HA_DIR/m1/patroni.log")"
ha_patroni_start m2
if [ "$HA_SYNC" = true ]; then
    sync=$(ha_wait_member sync 120) || bail "no synchronous standby: $(tail -5 "$HA_DIR/m2/patroni.log")"
    ok 0 "Patroni: $leader leads, $sync is the synchronous standby ($(secs "$(now)" "$t0") s from nothing)"
else
    sync=$(ha_wait_member replica 120) || bail "no standby: $(tail -5 "$HA_DIR/m2/patroni.log")"
    ok 0 "Patroni: $leader leads, $sync is an asynchronous standby ($(secs "$(now)" "$t0") s from nothing)"
fi
SYNC_EP=sync
[ "$HA_SYNC" = true ] || SYNC_EP=replica

# ---- pg_tide and pg_cron on the leader; the standby gets them by replication ----
HA_QDB=postgres ha_q "$leader" "CREATE DATABASE $HA_DB" >/dev/null || bail "CREATE DATABASE failed"
ha_q "$leader" "CREATE EXTENSION pg_cron" >/dev/null || bail "CREATE EXTENSION pg_cron failed"
ha_q "$leader" "CREATE EXTENSION pg_tide" >/dev/null || bail "CREATE EXTENSION pg_tide failed"
NODES=(h1 h2 h3 h4)
{
    echo "INSERT INTO tide.queues (name) VALUES ('ha');"
    for n in "${NODES[@]}"; do echo "SELECT tide.register_node('$n', 'cpu=64, memory=256Gi, gpu=$GPUS');"; done
    echo "SELECT tide.schedule_cycles('1 second');"
} >"$WORK/setup.sql"
psql -qAtX -v ON_ERROR_STOP=1 -d "$HA_DSN" -f "$WORK/setup.sql" >/dev/null || bail "setup failed"
if [ "$HA_SYNC" = true ]; then
    is "$(hq "SELECT string_agg(check_name || '=' || ok, ', ' ORDER BY check_name) FROM tide.check_replication()")" \
        "standbys=true, synchronous standby=true, synchronous_commit=true, synchronous_standby_names=true" \
        "tide.check_replication: every check ok on the synchronous pair"
else
    is "$(hq "SELECT string_agg(check_name || '=' || ok, ', ' ORDER BY check_name) FROM tide.check_replication()")" \
        "standbys=true, synchronous standby=false, synchronous_commit=true, synchronous_standby_names=false" \
        "tide.check_replication: the asynchronous pair is not ok"
fi
# pg_cron 1.4 starts the minute's loop at the next whole minute: until then
# one loop from here (it dies with its server; the @reboot job and the
# minute job carry on)
psql -qAtX -d "$HA_DSN" -c "CALL tide.cycle_loop('1 second', '$((62 - 10#$(date +%S))) seconds')" >/dev/null 2>&1 &
kick=$!
at_exit "kill $kick"

# ---- what runs: one line at each start and end, with the node and its GPUs ----
RUNS=$WORK/runs.log
: >"$RUNS"
cat >"$WORK/job.sh" <<EOF
#!/bin/sh
echo "\$TIDE_JOB_ID \$TIDE_ALLOCATION_ID \$TIDE_HA_NODE \$CUDA_VISIBLE_DEVICES start \$(date +%s.%N)" >> $RUNS
sleep "\$1"
echo "\$TIDE_JOB_ID \$TIDE_ALLOCATION_ID \$TIDE_HA_NODE \$CUDA_VISIBLE_DEVICES end \$(date +%s.%N)" >> $RUNS
EOF
for n in "${NODES[@]}"; do
    # shellcheck disable=SC2086
    TIDE_HA_NODE=$n "$LAUNCHER" --node "$n" --dsn "$HA_DSN" --state-dir "$WORK/state-$n" -v \
        ${TIDE_HA_LAUNCHER_OPTS:-} 2>>"$WORK/launcher-$n.log" &
    LAUNCHER_PIDS+=($!)
done
ACKS=$WORK/acks.log
: >"$ACKS"
/usr/bin/python3 "$TIDE_SRC/test/ha/submitter.py" "$HA_DSN" "$RATE" "$ACKS" "$WORK/stop" "sh $WORK/job.sh {seconds} s{n}" &
sub=$!
at_exit "touch $WORK/stop; kill $sub"
sleep 2
like "$(cat "$RUNS")" " start " "jobs run before any failover"

# first line of launcher log FILE at or after epoch T whose text matches REGEX: its epoch
first_after() {
    python3 - "$1" "$2" "$3" <<'PY'
import datetime, re, sys
path, t, pat = sys.argv[1], float(sys.argv[2]), re.compile(sys.argv[3])
for line in open(path, errors="replace"):
    if not pat.search(line):
        continue
    try:
        e = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        continue
    e = e.replace(tzinfo=datetime.timezone.utc).timestamp()
    if e >= t:
        print("%.3f" % e)
        break
PY
}

# every acknowledged id on the leader, with the submission that got it
check_acks() {
    local label=$1 n_acks res
    awk '$1 == "ack" { printf "(%s, %s)\n", $2, $4 }' "$ACKS" | paste -sd, >"$WORK/acks.values"
    n_acks=$(grep -c '^ack' "$ACKS")
    res=$(psql -qAtX -v ON_ERROR_STOP=1 -d "$HA_DSN" -f - <<SQL
SELECT count(*) FILTER (WHERE j.id IS NULL) || ' ' || count(*) FILTER (WHERE j.command NOT LIKE '% s' || a.n)
  FROM (VALUES $(cat "$WORK/acks.values")) a(id, n) LEFT JOIN tide.jobs j ON j.id = a.id;
SQL
)
    is "$res" "0 0" "$label: all $n_acks acknowledged jobs exist on the leader, each the submission that was acknowledged (missing, other)"
}

check_runs() {
    local label=$1 out twice overlaps
    out=$(python3 "$TIDE_SRC/test/ha/check_runs.py" "$RUNS" "$(now)")
    twice=$(printf '%s\n' "$out" | sed -n 's/^twice //p')
    overlaps=$(printf '%s\n' "$out" | sed -n 's/^overlaps //p')
    is "${twice%% *}" 0 "$label: no command ran twice ($(grep -c ' start ' "$RUNS") starts; twice: $twice)"
    is "${overlaps%% *}" 0 "$label: no GPU ran two commands at once (overlaps, seconds, examples: $overlaps)"
}

FIGURES=()
for k in $(seq "$FAILOVERS"); do
    sleep "$LOAD"
    leader=$(ha_member_where primary) || bail "failover $k: no leader"
    standby=$(ha_other "$leader")
    is "$(ha_wait_member $SYNC_EP 90)" "$standby" "failover $k: $standby is the $SYNC_EP standby before the kill"
    pm=$(ha_postmaster_pid "$leader")
    kids=$(pgrep -P "$pm" | tr '\n' ' ')
    acks_before=$(grep -c '^ack' "$ACKS")
    if [ "$STALL" != 0 ]; then
        # the leader stops sending WAL (what it sent is in the standby's
        # socket already); the walsenders die with the kill below
        ws=$(ha_walsender_pids "$leader")
        # shellcheck disable=SC2086
        [ -n "$ws" ] && kill -STOP $ws
        sleep "$STALL"
    fi
    t_kill=$(now)
    kill -KILL "$pm"
    # shellcheck disable=SC2086
    [ "$STALL" != 0 ] && [ -n "$ws" ] && kill -KILL $ws
    # the moment the standby takes writes
    t_w=""
    while [ "$(secs "$(now)" "$t_kill" | cut -d. -f1)" -lt 60 ]; do
        [ "$(ha_q "$standby" "SELECT NOT pg_is_in_recovery()" 2>/dev/null)" = t ] && { t_w=$(now); break; }
        sleep 0.05
    done
    [ -n "$t_w" ] || bail "failover $k: $standby was not promoted within 60 s"
    promote=$(secs "$t_w" "$t_kill")
    ok 0 "failover $k: kill -9 of $leader's postmaster; $standby takes writes $promote s later"
    # cycles: pg_cron's @reboot job starts the loop on the promoted standby
    first_cycle=""
    for _ in $(seq 100); do
        first_cycle=$(ha_q "$standby" "SELECT extract(epoch FROM min(started_at)) FROM tide.cycles WHERE started_at >= to_timestamp($t_w)" 2>/dev/null)
        [ -n "$first_cycle" ] && break
        sleep 0.2
    done
    ok "$([ -n "$first_cycle" ] && echo 0 || echo 1)" \
        "failover $k: cycles resume on the new leader (the first $( [ -n "$first_cycle" ] && secs "$first_cycle" "$t_w") s after it takes writes)"
    # launchers: their first successful claim after the new leader takes
    # writes.  It took writes no later than the harness saw it (t_w, polled
    # with psql, late by up to a few tenths on a loaded machine) nor than
    # the first launcher connected to it read-write: the earlier of the two.
    t_rw=$t_w
    for n in "${NODES[@]}"; do
        c=$(first_after "$WORK/launcher-$n.log" "$t_kill" "event=connected" | head -1)
        [ -n "$c" ] && t_rw=$(python3 -c "print(min($t_rw, $c))")
    done
    worst=0 delays=""
    for n in "${NODES[@]}"; do
        c=""
        for _ in $(seq 100); do
            c=$(first_after "$WORK/launcher-$n.log" "$t_rw" "event=batch call=claim n=[0-9]")
            [ -n "$c" ] && break
            sleep 0.2
        done
        d=$([ -n "$c" ] && secs "$c" "$t_rw" || echo never)
        delays="$delays $n=$d"
        [ "$d" = never ] && d=999
        worst=$(python3 -c "print(max(float('$worst'), float('$d')))")
    done
    ok "$(python3 -c "print(0 if $worst <= 2.0 else 1)")" \
        "failover $k: launchers claim within 2 s of the new leader taking writes (s:$delays)"
    # the killed postmaster's children must go by themselves, or the old leader cannot start again
    left=""
    for _ in $(seq 50); do
        left=""
        for p in $kids; do alive "$p" && left="$left $p:$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-40)"; done
        [ -z "$left" ] && break
        sleep 0.2
    done
    is "$left" "" "failover $k: the killed postmaster's server processes exit within 10 s"
    for p in $kids; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
    sleep "$LOAD"
    check_acks "failover $k"
    is "$(grep -c '^ack' "$ACKS" | awk -v b="$acks_before" '{ print ($1 > b) ? "more" : "none" }')" more \
        "failover $k: submits are acknowledged by the new leader"
    # the old leader comes back as the synchronous standby (pg_rewind as needed)
    back=$(ha_wait_member $SYNC_EP 120)
    t_back=$(now)
    rewind=$(grep -c 'running pg_rewind' "$HA_DIR/$leader/patroni.log" | sed 's/^0$/no/; s/^[1-9][0-9]*$/yes/')
    is "$back" "$leader" "failover $k: $leader rejoins as the $SYNC_EP standby ($(secs "$t_back" "$t_kill") s after the kill; pg_rewind so far: $rewind)"
    check_runs "failover $k"
    FIGURES+=("failover $k: writes after ${promote} s, first cycle after $([ -n "$first_cycle" ] && secs "$first_cycle" "$t_w") s, claims:$delays, rejoined after $(secs "$t_back" "$t_kill") s")
done

# ---- the end: stop submitting, let the work drain, check everything once more ----
touch "$WORK/stop"
wait "$sub"
n_acks=$(grep -c '^ack' "$ACKS")
ids=$(awk '$1 == "ack" { print $2 }' "$ACKS" | paste -sd,)
left=$(for _ in $(seq 300); do
    l=$(hq "SELECT count(*) FROM tide.jobs WHERE id IN ($ids) AND state NOT IN ('succeeded', 'failed', 'cancelled')" 2>/dev/null)
    [ "$l" = 0 ] && break
    sleep 0.2
done; echo "$l")
is "$left" 0 "every acknowledged job ends ($n_acks submitted)"
is "$(hq "SELECT string_agg(state || '=' || n, ' ' ORDER BY state) FROM (SELECT state, count(*) n FROM tide.jobs WHERE id IN ($ids) GROUP BY state) s")" \
    "succeeded=$n_acks" "every acknowledged job succeeded"
check_acks "at the end"
check_runs "at the end"
standby=$(ha_member_where $SYNC_EP)
is "$(HA_QDB=$HA_DB ha_q "$standby" "SELECT (SELECT count(*) > 0 FROM tide.metrics) AND length(tide.metrics_prometheus()) > 0 AND (SELECT count(*) FROM tide.check_replication()) = 1")" t \
    "analysts read tide.metrics on the synchronous standby; check_replication says it is one"
for f in "${FIGURES[@]}"; do echo "# $f"; done
echo "# $FAILOVERS failovers in $(secs "$(now)" "$T_START") s (replication: synchronous_mode $HA_SYNC, stall $STALL s, $RATE submits a second)"
echo "# $(grep -c '^unknown' "$ACKS") submits with unknown outcome, $(grep -c '^connect_failed' "$ACKS") failed connection attempts, $n_acks acknowledged"
finish
