#!/usr/bin/env bash
# Restarting PostgreSQL while jobs run loses nothing: the launcher keeps
# its children, queues the exits it reaps while the server is away,
# reconnects with backoff, reports them, LISTENs again and picks up new
# work.
. "$(dirname "$0")/lib.bash"
keep_bin=$PG_BIN
. "$TIDE_SRC/tools/lib.sh"     # cluster_stop, cluster_start, cluster_restart
PG_BIN=$keep_bin               # the server the runner started, not lib.sh's default

fresh_db
setup_cluster n1 4
start_launcher n1

ja=$(submit 'gpu=1' "echo x >> $WORK/runs.a; while [ ! -e $WORK/go ]; do sleep 0.1; done; touch $WORK/a.done; exit 4")
jb=$(submit 'gpu=1' "echo x >> $WORK/runs.b; sleep 6")
place "$ja" n1 0; place "$jb" n1 1
is "$(wait_for "SELECT count(*) FROM tide.jobs WHERE id IN ($ja, $jb) AND state IN ('running', 'failed')" 2)" 2 \
    "two jobs started"
# the server goes away; job a exits while it is down
cluster_stop "$TIDE_TMP"
touch "$WORK/go"
for _ in $(seq 100); do grep -Eq "event=exited alloc=[0-9]+ job=$ja " "$WORK/launcher-n1.log" && break; sleep 0.1; done
like "$(cat "$WORK/launcher-n1.log")" "event=exited alloc=[0-9]+ job=$ja .*exit_code=4" "the launcher reaps an exit while the server is down"
( cluster_start "$TIDE_TMP" "$PGPORT" "$TIDE_DB" )
ok $? "PostgreSQL started again"

is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $ja) FROM tide.jobs WHERE id = $ja" "failed 4" 30)" "failed 4" \
    "the exit reaped while the server was down is reported with its code"
# a restart in one go (pg_ctl restart) while job b still runs
cluster_restart "$TIDE_TMP"
ok $? "PostgreSQL restarted"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" succeeded 30)" succeeded \
    "the job that ran through the restarts is reported"
jc=$(submit 'gpu=1' "echo x >> $WORK/runs.c; echo \"\$CUDA_VISIBLE_DEVICES\" > $WORK/c.out")
place "$jc" n1 2
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" succeeded 30)" succeeded \
    "new work placed after the restarts runs"
log=$(cat "$WORK/launcher-n1.log")
like "$log" "event=disconnected" "the launcher saw the connection drop"
is "$(grep -c 'event=connected' "$WORK/launcher-n1.log")" 3 "and connected again after each (the second restart came after the first reconnection)"
for x in a b c; do
    is "$(wc -l < "$WORK/runs.$x" 2>/dev/null | tr -d ' ')" 1 "job $x ran exactly once"
done
finish
