#!/usr/bin/env bash
# pg_tide quick start: one command that shows a GPU cluster at work.
#
#   bash tools/quickstart.sh          set everything up and run a demo workload
#   bash tools/quickstart.sh watch    show the live table again
#   bash tools/quickstart.sh submit   submit another round of the workload
#   bash tools/quickstart.sh psql     open psql on the demo database
#   bash tools/quickstart.sh stop     stop launchers, cycles and PostgreSQL
#   bash tools/quickstart.sh purge    stop, then delete the demo directory
#
# As root on Debian 12: installs what is missing, builds and installs pg_tide,
# starts a local PostgreSQL 15 with pg_cron in ./.demo (or $TIDE_DEMO_DIR) on
# port $TIDE_DEMO_PORT (default 54329), creates the extensions, registers 4
# nodes x 8 GPUs (two NVLink domains each) and two queues (online inference,
# offline training), starts one tide-launcher per node, has pg_cron run a
# scheduling cycle every second, submits a mixed workload whose commands sleep
# briefly and print their CUDA_VISIBLE_DEVICES, and shows a refreshing table
# until the work is done (Ctrl-C leaves the table; everything keeps running).
# See docs/quickstart.md.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"

DEMO=${TIDE_DEMO_DIR:-$SRC/.demo}
# psql and libpq take a socket directory for a host name only when it is an
# absolute path ("-h .demo" looks up a host called ".demo")
case $DEMO in /*) ;; *) DEMO=$PWD/$DEMO ;; esac
PORT=${TIDE_DEMO_PORT:-54329}
DB=${TIDE_DEMO_DB:-tide}
WATCH_SECONDS=${TIDE_DEMO_SECONDS:-180}
NODES="gpu-a1 gpu-a2 gpu-b1 gpu-b2"

# ---- helpers ----

# Close what the caller left open (e.g. a lock file when this script is run
# under flock): PostgreSQL and the launchers started here live on, and would
# hold it for as long as they run.  Bash reads this script through a high
# descriptor (255), which stays.
close_inherited_fds() {
    local fd
    for fd in $(ls /proc/$$/fd 2>/dev/null); do
        if [ "$fd" -gt 2 ] && [ "$fd" -lt 200 ]; then
            eval "exec $fd>&-" 2>/dev/null
        fi
    done
}

sql() {
    psql -qAtX -v ON_ERROR_STOP=1 -h "$DEMO" -p "$PORT" -U postgres -d "$DB" "$@"
}

is_running() {
    [ -f "$DEMO/data/postmaster.pid" ] &&
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DEMO/data" status >/dev/null 2>&1
}

# The demo directory must be reachable by the postgres OS user (PostgreSQL
# refuses to run as root); a checkout under /root is not, so fall back.
choose_demo_dir() {
    local parent
    parent=$(dirname "$DEMO")
    mkdir -p "$parent"
    if ! runuser -u postgres -- test -x "$parent" 2>/dev/null; then
        local alt=/var/tmp/pg_tide-demo
        say "the postgres user cannot reach $parent; using $alt instead (set TIDE_DEMO_DIR to choose)"
        DEMO=$alt
    fi
}

stop_launchers() {
    local f pid
    for f in "$DEMO"/launchers/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
        fi
        rm -f "$f"
    done
}

# Kill the work that launchers leave running on purpose (they are stopped
# for good here), using the shepherd records in their state directories.
stop_leftover_work() {
    local f pid
    for f in "$DEMO"/launchers/state-*/*.pid; do
        [ -f "$f" ] || continue
        read -r pid _ <"$f" 2>/dev/null
        [ "${pid:-0}" -gt 1 ] && kill -TERM -- "-$pid" 2>/dev/null
    done
}

start_launchers() {
    local node
    mkdir -p "$DEMO/launchers" "$DEMO/output"
    chown postgres: "$DEMO/launchers" "$DEMO/output"
    for node in $NODES; do
        # exec keeps the pid: the file names the launcher itself; setsid
        # keeps Ctrl-C in this terminal (and its closing) away from it
        setsid runuser -u postgres -- sh -c 'echo $$ > "$1"; exec "$2" --node "$3" --dsn "$4" \
                --state-dir "$5" --output-dir "$6" --grace-period 5 2>>"$7"' sh \
            "$DEMO/launchers/$node.pid" "$PG_BIN/tide-launcher" "$node" \
            "host=$DEMO port=$PORT dbname=$DB user=postgres" \
            "$DEMO/launchers/state-$node" "$DEMO/output" "$DEMO/launchers/$node.log" &
    done
    sleep 0.5
    for node in $NODES; do
        [ -s "$DEMO/launchers/$node.pid" ] && kill -0 "$(cat "$DEMO/launchers/$node.pid")" 2>/dev/null ||
            { tail -5 "$DEMO/launchers/$node.log" >&2; die "launcher for $node did not start"; }
    done
}

# ---- the demo cluster and workload ----

setup_cluster() {
    sql <<'SQL'
-- two queues: latency-sensitive inference that may reclaim from training,
-- and batch training that borrows whatever is free
INSERT INTO tide.queues (name, quota, capability, priority, reclaimable, service_type)
VALUES ('online',  'gpu=12', 'gpu=16', 80000, false, 'inference'),
       ('offline', 'gpu=20', NULL,     20000, true,  'training');
-- four nodes of 8 GPUs; GPUs 0-3 and 4-7 share an NVLink domain
SELECT tide.register_node(n, 'cpu=96, memory=768Gi, gpu=8', gpu_type => 'NVIDIA-H100',
                          labels => jsonb_build_object('rack', r),
                          gpu_topology => '{0,0,0,0,1,1,1,1}')
  FROM (VALUES ('gpu-a1', 'a'), ('gpu-a2', 'a'), ('gpu-b1', 'b'), ('gpu-b2', 'b')) AS v(n, r);
SQL
}

# One round of a mixed workload: training gangs and single-GPU training,
# then inference services arriving while training holds the cluster.
# Prints the ids of the jobs it submitted, comma-separated.
submit_workload() {
    local round=${1:-1} first second
    first=$(sql -v round="$round" <<'SQL'
SELECT tide.submit('offline', 'cpu=16, memory=128Gi, gpu=8', replicas => 2,
                   name => format('pretrain-%s', :'round'),
                   command => 'echo "pretrain replica $TIDE_REPLICA on $TIDE_NODE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 20');
SELECT tide.submit('offline', 'cpu=8, memory=64Gi, gpu=4',
                   name => format('finetune-%s-%s', :'round', i),
                   command => format('echo "finetune %s on $TIDE_NODE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep %s', i, 8 + 3 * i))
  FROM generate_series(1, 3) AS i;
SELECT tide.submit('offline', 'cpu=2, memory=16Gi, gpu=1',
                   name => format('sweep-%s-%s', :'round', i),
                   command => format('echo "sweep %s on $TIDE_NODE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep %s', i, 3 + i % 5))
  FROM generate_series(1, 8) AS i;
SQL
    ) || return 1
    sleep 3
    second=$(sql -v round="$round" <<'SQL'
SELECT tide.submit('online', format('cpu=4, memory=32Gi, gpu=%s', g)::tide.resvec, priority => 100,
                   name => format('serve-%s-%s', :'round', i),
                   command => format('echo "serving %s on $TIDE_NODE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep %s', i, 6 + i))
  FROM generate_series(1, 6) AS i, LATERAL (SELECT CASE WHEN i % 3 = 0 THEN 2 ELSE 1 END AS g) AS x;
SQL
    ) || return 1
    echo $first $second | tr ' ' ','
}

# ---- the live table ----

show_table() {
    sql <<'SQL'
\pset footer off
\pset format aligned
\pset tuples_only off
\echo '== queues'
SELECT q.name AS queue, q.priority, q.quota::text AS quota,
       count(*) FILTER (WHERE j.state = 'pending') AS pending,
       count(*) FILTER (WHERE j.state IN ('allocated', 'running', 'evicting')) AS active,
       count(*) FILTER (WHERE j.state = 'succeeded') AS done,
       count(*) FILTER (WHERE j.state IN ('failed', 'cancelled')) AS failed,
       coalesce((SELECT sum(tide.gpu_count(a.gpus)) FROM tide.allocations a JOIN tide.jobs j2 ON j2.id = a.job_id
                  WHERE j2.queue = q.name AND a.state <> 'released'), 0) AS gpus_in_use
  FROM tide.queues q LEFT JOIN tide.jobs j ON j.queue = q.name
 GROUP BY q.name, q.priority, q.quota ORDER BY q.priority DESC, q.name;
\echo '== nodes'
SELECT n.name AS node, n.state, tide.get(n.capacity, 'gpu') AS gpus,
       coalesce(sum(tide.gpu_count(a.gpus)), 0) AS in_use,
       coalesce(string_agg(format('%s:%s', j.name, a.gpus), ' ' ORDER BY a.gpus::text) FILTER (WHERE a.id IS NOT NULL), '') AS "job:gpus",
       to_char(now() - n.heartbeat_at, 'SS.MS"s"') AS heartbeat_age
  FROM tide.nodes n
  LEFT JOIN tide.allocations a ON a.node = n.name AND a.state <> 'released'
  LEFT JOIN tide.jobs j ON j.id = a.job_id
 GROUP BY n.name, n.state, n.capacity, n.heartbeat_at ORDER BY n.name;
\echo '== jobs (latest 14)'
SELECT j.id, j.name, j.queue, j.state,
       (SELECT string_agg(format('%s[%s]', a.node, a.gpus), ' ' ORDER BY a.replica)
          FROM tide.allocations a WHERE a.job_id = j.id AND a.state <> 'released') AS placement,
       left(coalesce(j.pending_reason, ''), 40) AS pending_reason,
       to_char(now() - j.created_at, 'MI:SS') AS age
  FROM tide.jobs j ORDER BY j.id DESC LIMIT 14;
SELECT format('cycles: %s (last %s ms ago)', count(*),
              coalesce(round(extract(epoch FROM now() - max(started_at)) * 1000), 0)) AS " "
  FROM tide.cycles;
SQL
}

# Refresh the table until the jobs watched have finished: those whose ids
# are in $1 (comma-separated) and their automatic retries, or every job
# when $1 is empty.
watch_table() {
    local ids=${1:-} end=$(($(date +%s) + WATCH_SECONDS)) left
    trap 'echo; summary; advice; exit 0' INT
    while :; do
        if [ -t 1 ]; then printf '\033[H\033[2J'; fi
        printf 'pg_tide demo: %s, database %s  (Ctrl-C leaves this view; everything keeps running)\n\n' \
            "$(date +%T)" "$DB"
        show_table 2>&1
        left=$(sql -v ids="{$ids}" 2>/dev/null <<'SQL'
WITH RECURSIVE watched AS (
    SELECT id FROM tide.jobs WHERE :'ids' = '{}' OR id = ANY (:'ids'::bigint[])
    UNION
    SELECT j.id FROM tide.jobs j JOIN watched w ON j.retry_of = w.id)
SELECT count(*) FROM tide.jobs
 WHERE id IN (SELECT id FROM watched) AND state NOT IN ('succeeded', 'failed', 'cancelled');
SQL
        )
        [ "${left:-1}" = 0 ] && break
        [ "$(date +%s)" -ge "$end" ] && { say "stopped watching after ${WATCH_SECONDS}s ($left jobs not finished)"; break; }
        if [ -t 1 ]; then sleep 1; else sleep 5; fi
    done
    trap - INT
}

summary() {
    echo
    echo "== summary"
    sql <<'SQL'
\pset footer off
\pset tuples_only off
SELECT j.queue, count(*) AS jobs,
       count(*) FILTER (WHERE j.state = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE j.state = 'failed') AS failed,
       round(avg(extract(epoch FROM a.first_start - j.created_at))::numeric, 2) AS mean_wait_s,
       round(max(extract(epoch FROM a.first_start - j.created_at))::numeric, 2) AS max_wait_s
  FROM tide.jobs j
  LEFT JOIN LATERAL (SELECT min(started_at) AS first_start FROM tide.allocations WHERE job_id = j.id) a ON true
 GROUP BY j.queue ORDER BY j.queue;
SELECT count(*) AS cycles, round(avg(extract(epoch FROM finished_at - started_at)) * 1000, 2) AS mean_cycle_ms,
       (SELECT count(*) FROM tide.evictions) AS evictions
  FROM tide.cycles;
SQL
    echo
    echo "== what the commands printed (a few of $DEMO/output/*.log)"
    ls "$DEMO"/output/*.log >/dev/null 2>&1 && head -qn1 "$DEMO"/output/*.log 2>/dev/null | sort | head -12
}

advice() {
    cat <<EOF

pg_tide is running: PostgreSQL in $DEMO (port $PORT), pg_cron runs a cycle
every second, and one launcher per node waits for work (logs in
$DEMO/launchers/).  Look around with:

    psql -h "$DEMO" -p $PORT -U postgres $DB      (or: bash tools/quickstart.sh psql)
      SELECT * FROM tide.jobs ORDER BY id DESC LIMIT 10;
      SELECT * FROM tide.job_events ORDER BY at DESC LIMIT 20;
      SELECT tide.submit('offline', 'gpu=2', command => 'nvidia-smi || echo \$CUDA_VISIBLE_DEVICES');

More work:   bash tools/quickstart.sh submit
The table:   bash tools/quickstart.sh watch
Stop it all: bash tools/quickstart.sh stop     (purge: also delete $DEMO)
EOF
}

# ---- commands ----

cmd_start() {
    [ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts PostgreSQL as the postgres user)"
    close_inherited_fds
    install_packages
    choose_demo_dir
    stop_launchers
    stop_leftover_work
    export PGHOST=$DEMO PGPORT=$PORT PGUSER=postgres
    # the lock keeps concurrent builds of other checkouts on this machine
    # from installing between our install and our CREATE EXTENSION
    say "building and installing pg_tide, creating pg_cron and a fresh pg_tide in database $DB"
    (
        flock -w 600 9 || die "waited 10 minutes for /tmp/pg_tide_install.lock (held by another build on this machine; do not run this script under flock yourself: it takes the lock)"
        build_and_install "$SRC"
        [ -x "$PG_BIN/tide-launcher" ] || die "tide-launcher was not installed into $PG_BIN"
        # pg_tide is preloaded (shared_preload_libraries): a server that
        # runs an older build restarts to load this one
        if is_running; then
            say "restarting PostgreSQL in $DEMO to load the new build"
            cluster_restart "$DEMO"
        else
            say "starting PostgreSQL in $DEMO on port $PORT"
            cluster_start "$DEMO" "$PORT" "$DB"
        fi
        if [ "$(psql -qAtX -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" = 0 ]; then
            createdb "$DB" || die "createdb failed"
        fi
        sql -c "CREATE EXTENSION IF NOT EXISTS pg_cron" >/dev/null || die "CREATE EXTENSION pg_cron failed"
        sql -c "SELECT tide.unschedule_cycles()" >/dev/null 2>&1
        sql -c "DROP EXTENSION IF EXISTS pg_tide CASCADE" >/dev/null 2>&1
        sql -c "CREATE EXTENSION pg_tide" >/dev/null || die "CREATE EXTENSION pg_tide failed"
    ) 9>/tmp/pg_tide_install.lock || exit 1
    rm -rf "$DEMO/output" "$DEMO"/launchers/state-*

    say "registering 4 nodes x 8 GPUs and two queues"
    setup_cluster >/dev/null || die "could not register the demo cluster"
    say "starting one launcher per node"
    start_launchers
    # cycles start at once (on pg_cron < 1.5 in a loop pg_tide starts until
    # pg_cron's minute job takes over)
    say "scheduling a cycle every second with pg_cron (job $(sql -c "SELECT tide.schedule_cycles('1 second')"))"
    say "submitting a mixed workload"
    local ids
    ids=$(submit_workload 1) || die "could not submit the workload"
    watch_table "$ids"
    summary
    advice
}

cmd_stop() {
    choose_demo_dir
    stop_launchers
    stop_leftover_work
    if is_running; then
        sql -c "SELECT tide.unschedule_cycles()" >/dev/null 2>&1
        cluster_stop "$DEMO"
        say "stopped PostgreSQL and the launchers in $DEMO"
    else
        say "nothing running in $DEMO"
    fi
}

case ${1:-start} in
start) cmd_start ;;
watch) choose_demo_dir; is_running || die "not running: bash tools/quickstart.sh"; watch_table; summary; advice ;;
submit) choose_demo_dir; is_running || die "not running: bash tools/quickstart.sh"
    ids=$(submit_workload "$(date +%s)") || die "could not submit the workload"
    say "submitted jobs $ids; watching until they have finished"
    watch_table "$ids"; summary; advice ;;
psql) choose_demo_dir; is_running || die "not running: bash tools/quickstart.sh"
    shift; exec psql -X -h "$DEMO" -p "$PORT" -U postgres "$@" "$DB" ;;
stop) cmd_stop ;;
purge) cmd_stop; rm -rf "$DEMO"; say "removed $DEMO" ;;
-h | --help | help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' ;;
*) die "unknown command \"$1\" (start, watch, submit, psql, stop, purge)" ;;
esac
