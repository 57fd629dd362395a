# Shared by test/evidence/*.sh (sourced): a throwaway PostgreSQL 15 with
# pg_cron, pg_tide, nodes with fake GPUs served by real tide-launcher
# processes, and the invariant checks.  Run as root (like test/run.sh),
# with the build installed (make install, under the install lock) or with
# EVIDENCE_PG_BIN pointing at another installation that has it.
set -uo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$SRC/tools/lib.sh"
PG_BIN=${EVIDENCE_PG_BIN:-$PG_BIN}
EV_DB=tide_evidence
EV=$(mktemp -d /tmp/pg_tide_evidence.XXXXXX)
chmod 755 "$EV"
EV_STATE=$(mktemp -d /dev/shm/pg_tide_evidence.XXXXXX)
chmod 777 "$EV"
: >"$EV/starts"
chmod 666 "$EV/starts"
EV_LAUNCHERS=()
EV_PIDS=()

ev_cleanup() {
    local p f pid
    for p in "${EV_PIDS[@]}" "${EV_LAUNCHERS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${EV_PIDS[@]}" "${EV_LAUNCHERS[@]}"; do wait "$p" 2>/dev/null; done
    for f in "$EV_STATE"/state-*/*.pid; do
        [ -f "$f" ] || continue
        read -r pid _ <"$f" && [ "${pid:-0}" -gt 1 ] && kill -KILL -- "-$pid" 2>/dev/null
    done
    cluster_stop "$EV/pg"
    if [ -n "${EVIDENCE_KEEP:-}" ]; then echo "kept $EV $EV_STATE" >&2; else rm -rf "$EV" "$EV_STATE"; fi
}
trap ev_cleanup EXIT

q() { psql -qAtX -v ON_ERROR_STOP=1 -d "$EV_DB" -c "$1"; }

# ev_cluster: start the server; commits are synchronous (an acknowledged
# submission must survive a kill -9 of the postmaster; fsync stays off:
# the operating system keeps what was written, only the processes die).
ev_cluster() {
    [ "$(id -u)" = 0 ] || die "run as root"
    EV_PORT=$((57000 + RANDOM % 1000))
    # these settings follow cluster_start's own (the last line wins), so
    # the first start has them: no restart
    TIDE_EXTRA_CONF=$'synchronous_commit = on\nmax_connections = 300' \
        cluster_start "$EV/pg" "$EV_PORT" "$EV_DB"
    export PGHOST PGPORT PGUSER
    createdb "$EV_DB" || die "createdb"
    q "CREATE EXTENSION pg_tide" >/dev/null || die "CREATE EXTENSION pg_tide (make install?)"
    q "INSERT INTO tide.queues (name) VALUES ('ev')" >/dev/null
}

# ev_nodes K GPUS: K nodes ev-1 .. ev-K with GPUS fake GPUs each, and a
# real launcher for each (tide-launcher from the installation), with
# EV_LAUNCHER_OPTS when set (else one-second polls, heartbeats and backoff).
ev_nodes() {
    local k=$1 g=$2 i bin=$PG_BIN/tide-launcher
    [ -x "$bin" ] || bin=$SRC/tide-launcher
    # all the nodes in one statement (one psql for each took 0.3 s)
    q "SELECT tide.register_node('ev-' || i, 'cpu=64, memory=256Gi, gpu=$g') FROM generate_series(1, $k) i" >/dev/null
    for i in $(seq "$k"); do
        "$bin" --node "ev-$i" --dsn "dbname=$EV_DB host=$PGHOST port=$PGPORT user=postgres" \
            --state-dir "$EV_STATE/state-ev-$i" ${EV_LAUNCHER_OPTS:---poll-interval 1 --heartbeat-interval 1 --max-backoff 1} \
            --quiet 2>>"$EV/launcher-ev-$i.log" &
        EV_LAUNCHERS+=($!)
    done
}

# ev_crash: kill -9 of the postmaster, and start the server again as soon
# as the orphaned backends have left the old shared memory; fails when it
# does not come back.
ev_crash() {
    local pm
    pm=$(head -1 "$EV/pg/data/postmaster.pid" 2>/dev/null)
    [ -n "$pm" ] && kill -KILL "$pm"
    for _ in $(seq 100); do
        ( cluster_start "$EV/pg" "$EV_PORT" "$EV_DB" ) >/dev/null 2>&1 && break
        sleep 0.2
    done
    pg_isready -q -t 30
}

# The command of every job: note the allocation's start, then work a while.
ev_command() {
    printf 'echo $TIDE_ALLOCATION_ID >> %s; sleep %s' "$EV/starts" "$1"
}

# Violations of the invariants, one "name count" line each (all 0 when
# everything holds), checked in one snapshot:
#   gpu_overlap     two live allocations on one node share a GPU, at least
#                   one of them whole (R-C4)
#   gpu_overuse     a node's live allocations ask for more GPUs than it has
#   state_mismatch  a pending or finished job with an assigned or running
#                   allocation, or a running job with no live allocation
#   release_mark    a released allocation without released_at, or a live
#                   one with it (released once, and for good)
#   double_start    an allocation whose command started twice
ev_invariants() {
    psql -qAtX -F ' ' -d "$EV_DB" <<'SQL'
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT 'gpu_overlap', count(*) FROM tide.allocations a JOIN tide.allocations b
    ON a.node = b.node AND a.id < b.id AND a.gpus OPERATOR(tide.&&) b.gpus
 WHERE a.state IN ('assigned', 'running', 'releasing') AND b.state IN ('assigned', 'running', 'releasing')
   AND (a.gpu_milli IS NULL OR b.gpu_milli IS NULL);
SELECT 'gpu_overuse', count(*) FROM (
    SELECT a.node FROM tide.allocations a JOIN tide.nodes n ON n.name = a.node
     WHERE a.state IN ('assigned', 'running', 'releasing')
     GROUP BY a.node, n.capacity
    HAVING sum(tide.get(a.resources, 'gpu')) > tide.get(n.capacity, 'gpu')) o;
SELECT 'state_mismatch', count(*) FROM tide.jobs j
 WHERE (j.state IN ('pending', 'succeeded', 'failed', 'cancelled')
        AND EXISTS (SELECT 1 FROM tide.allocations a WHERE a.job_id = j.id AND a.state IN ('assigned', 'running')))
    OR (j.state = 'running'
        AND NOT EXISTS (SELECT 1 FROM tide.allocations a WHERE a.job_id = j.id AND a.state IN ('assigned', 'running', 'releasing')));
SELECT 'release_mark', count(*) FROM tide.allocations a
 WHERE (a.state = 'released') <> (a.released_at IS NOT NULL);
COMMIT;
SQL
    echo "double_start $(sort "$EV/starts" | uniq -d | wc -l)"
}

# A loop that submits one job at a time and notes each acknowledged id.
ev_submitter() {
    local sleep_s=$1 out=$2 id
    while :; do
        id=$(psql -qAtX -d "$EV_DB" -c "SELECT tide.submit('ev', 'cpu=1, gpu=1', command => \$c\$$(ev_command "$sleep_s")\$c\$)" 2>/dev/null) \
            && [ -n "$id" ] && echo "$id" >>"$out"
        sleep 0.05
    done
}

# A loop that runs a cycle every INTERVAL seconds, through restarts.
ev_cycler() {
    while :; do
        psql -qAtX -d "$EV_DB" -c "SELECT tide.run_cycle()" >/dev/null 2>&1
        sleep "$1"
    done
}

# Wait until every job in FILE is finished; prints how many are not.
ev_drain() {
    local file=$1 timeout=$2 end left
    end=$(($(date +%s) + timeout))
    while :; do
        left=$(q "SELECT count(*) FROM unnest('{$(paste -sd, "$file")}'::bigint[]) i
                   WHERE NOT EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = i AND j.state IN ('succeeded', 'failed', 'cancelled'))" 2>/dev/null)
        [ "$left" = 0 ] && break
        [ "$(date +%s)" -ge "$end" ] && break
        sleep 0.3
    done
    echo "${left:-?}"
}
