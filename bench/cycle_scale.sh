#!/usr/bin/env bash
# The cycle at the size of the largest GPU clusters: builds and installs
# pg_tide, starts a throwaway PostgreSQL and runs bench/cycle_scale.sql at
# 10k pending x 1k nodes and 100k x 10k, with --huge also at 250k x 25k.
# For each size: the first cycle from empty against its contract floor
# (wall and CPU), the settle (until the reason backlog is empty and a cycle
# is quiet; it says so loudly if its cap stops it), ten quiet cycles, and
# busy cycles (10 arrivals and 10 exits before each: whole, load, decide,
# write, wall and CPU), with the size of pg_tide's relations and how much
# of them is in shared buffers after each step.
#
# --features: instead, what each feature of the scheduler costs a busy
# cycle at 100k x 10k, on against off.  Alternated in one session where a
# switch exists: tide.fair_share_half_life 7 days against 0;
# owner_fair_share on every queue (the jobs of 40 owners); time limits on
# 20,000 running jobs (two per node) against none; a 3-level queue tree
# (cycle_cluster.psql -v tree=1) against the same 100 queues flat; a fifth
# of the backlog waiting on a dependency against none (ten arrays of 1,000
# in both).  In separate sessions, alternated twice: dependencies and
# arrays (cycle_extras.psql -v pipelines=1) against none.  --feature NAME
# runs one of them: fair_share, owner_fair_share, time_limits, queue_tree,
# dependencies, pipelines (repeat it for more).
#
# Run as root on Debian 12 (like test/run.sh):
#   bash bench/cycle_scale.sh [--huge] [--features | --feature NAME ...]
#                             [--sizes "JOBSxNODES ..."]
#                             [--busy N] [--first-only]
# --sizes replaces the list of sizes (e.g. --sizes 250000x25000); --busy
# sets the number of busy cycles (20); --first-only stops each size after
# its first cycle and the relations' sizes (to compare shared_buffers).
# BENCH_SHARED_BUFFERS (default 128MB): the server's shared_buffers;
# BENCH_FEATURE_SIZE (default 100000x10000): the size of --features.
# TIDE_PG_BIN: another copy of the server (tools/lib.sh); without one the
# script holds the install lock while it runs.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tools/lib.sh"
SIZES="10000x1000 100000x10000" FEATURES= BUSY=20 FIRST_ONLY=0
usage() {
    echo "usage: $0 [--huge] [--features | --feature NAME ...] [--sizes \"JOBSxNODES ...\"] [--busy N] [--first-only]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --huge) SIZES="$SIZES 250000x25000" ;;
        --features) FEATURES=all ;;
        --feature) [ $# -ge 2 ] && [[ $2 =~ ^(fair_share|owner_fair_share|time_limits|queue_tree|dependencies|pipelines)$ ]] || usage
                   [ "$FEATURES" = all ] || FEATURES="$FEATURES $2"; shift ;;
        --first-only) FIRST_ONLY=1 ;;
        --sizes) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+x[0-9]+( [0-9]+x[0-9]+)*$ ]] || usage; SIZES=$2; shift ;;
        --busy) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || usage; BUSY=$2; shift ;;
        *) usage ;;
    esac
    shift
done
SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-128MB}
bench_setup "$SRC"
# Checkpoints by WAL volume would land in the middle of the cycles after
# the big setups: a deployment's max_wal_size is sized for its writes.
export TIDE_EXTRA_CONF="${TIDE_EXTRA_CONF:-}
shared_buffers = $SHARED_BUFFERS
max_wal_size = 8GB"
cluster_start "$TMP" "$PORT" postgres
echo "cycle_scale: commit $(git -C "$SRC" rev-parse --short HEAD)$(git -C "$SRC" diff --quiet HEAD -- src extension || echo +)," \
    "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
    "shared_buffers $(psql -XAtc 'SHOW shared_buffers' postgres); uptime:$(uptime | sed 's/.*up [^,]*,//')"

# One session of cycle_scale.sql; the cycle's debug lines shortened, other
# debug messages dropped with the lines that continue them (LINE, QUERY,
# CONTEXT, a statement's text).
session() {
    psql -X -q -v busy="$BUSY" -v first_only="$FIRST_ONLY" "$@" -f "$SRC/bench/cycle_scale.sql" postgres 2>&1 \
        | awk '/^psql:[^:]*:[0-9]*: DEBUG:  tide.run_cycle: / { sub(/^psql:[^:]*:[0-9]*: DEBUG:  tide.run_cycle: /, "  debug: "); print; skip = 0; fflush(); next }
               /^psql:[^:]*:[0-9]*: DEBUG:/ { skip = 1; next }
               skip && /^(LINE [0-9]+:|QUERY:|CONTEXT:|DETAIL:|HINT:|[ \t])/ { next }
               /^$/ { next }
               { skip = 0; print; fflush() }'
}

if [ -z "$FEATURES" ]; then
    for size in $SIZES; do
        session -v jobs="${size%x*}" -v nodes="${size#*x}" -v run="$size"
    done
    exit 0
fi

FEATURE_SIZE=${BENCH_FEATURE_SIZE:-100000x10000}
J=${FEATURE_SIZE%x*} N=${FEATURE_SIZE#*x}
want() { [ "$FEATURES" = all ] || [[ " $FEATURES " == *" $1 "* ]]; }
if want fair_share; then
    session -v jobs=$J -v nodes=$N -v run=fair_share -v feature=fair_share_half_life \
        -v feature_off="SET tide.fair_share_half_life = 0" -v feature_on="SET tide.fair_share_half_life = '7d'"
fi
if want owner_fair_share; then
    session -v jobs=$J -v nodes=$N -v run=owner_fair_share -v feature=owner_fair_share \
        -v feature_off="UPDATE tide.queues SET owner_fair_share = false" \
        -v feature_on="UPDATE tide.queues SET owner_fair_share = true"
fi
if want time_limits; then
    session -v jobs=$J -v nodes=$N -v run=time_limits -v feature=time_limits -v running=$((2 * N)) \
        -v feature_off="UPDATE tide.jobs j SET time_limit = NULL FROM running_jobs r WHERE j.id = r.id" \
        -v feature_on="UPDATE tide.jobs j SET time_limit = make_interval(hours => (1 + r.i % 24)::int) FROM running_jobs r WHERE j.id = r.id"
fi
if want queue_tree; then
    session -v jobs=$J -v nodes=$N -v run=queue_tree -v feature=queue_tree -v queues=100 -v tree=1 \
        -v feature_off="UPDATE tide.queues SET parent = NULL WHERE name LIKE 'queue-%'" \
        -v feature_on="UPDATE tide.queues SET parent = format('dept-%s', substr(name, 7)::int / 5) WHERE name LIKE 'queue-%'"
fi
# Dependencies switched in one session (the arrays of -v pipelines=1 stay
# in both arms): a fifth of the backlog waits on the job before it, or not.
# Each switch (inserting or deleting the 20,000 rows) takes 1 to 3 s of
# CPU at 100k (bench/deps_bench.sh); the session about 2.5 minutes.
if want dependencies; then
    session -v jobs=$J -v nodes=$N -v run=dependencies -v feature=dependencies -v pipelines=1 \
        -v feature_off="DELETE FROM tide.job_dependencies d USING shapes s WHERE d.job_id = s.i" \
        -v feature_on="INSERT INTO tide.job_dependencies (job_id, depends_on, condition) SELECT s.i, s.i - 1, 'succeeded' FROM shapes s JOIN tide.jobs j ON j.id = s.i AND j.state = 'pending' WHERE s.i % 5 = 0 ON CONFLICT DO NOTHING"
fi
want pipelines || exit 0
for round in 1 2; do
    session -v jobs=$J -v nodes=$N -v run="pipelines off $round" -v pipelines=0
    session -v jobs=$J -v nodes=$N -v run="pipelines on $round" -v pipelines=1
done
echo "== dependencies and arrays: busy cycles of the sessions above, on / off"
psql -X -q -At postgres <<'SQL'
SELECT format('%s: cycles=%s, whole min / median %s / %s, cpu min / median %s / %s, load median %s, decide median %s',
              run, count(*), round(min(ms)::numeric, 1), round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1),
              round(min(cpu_ms)::numeric, 1), round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY load_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY decide_ms))::numeric, 1))
  FROM public.scale_cycles WHERE run LIKE 'pipelines %' AND kind = 'busy' GROUP BY run ORDER BY run;
SELECT format('pipelines on / off (all sessions): median whole %s, median cpu %s, min cpu %s',
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE run LIKE 'pipelines on%')
                     / percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE run LIKE 'pipelines off%'))::numeric, 3),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms) FILTER (WHERE run LIKE 'pipelines on%')
                     / percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms) FILTER (WHERE run LIKE 'pipelines off%'))::numeric, 3),
              round((min(cpu_ms) FILTER (WHERE run LIKE 'pipelines on%')
                     / min(cpu_ms) FILTER (WHERE run LIKE 'pipelines off%'))::numeric, 3))
  FROM public.scale_cycles WHERE run LIKE 'pipelines %' AND kind = 'busy';
SQL
