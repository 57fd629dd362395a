#!/usr/bin/env bash
# The Philly trace through tide-sim: strict FIFO, backfill, and EASY
# backfill with the oldest job reserving (time limit = duration x 1 and
# x 2), on 32, 64 and 128 nodes of 8 GPUs: mean and p99 wait, mean
# completion, GPU utilisation, as a Markdown table.  Usage:
#   bash bench/sim_philly.sh [--out DIR] [TRACES_DIR]
# --out DIR keeps each run's sorted waits (DIR/philly.NODES.QUEUE.waits)
# for bench/plots.sh.  Environment: TIDE_SIM, NODES (default "32 64 128"),
# POLICY (node order, default pack).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/sim_lib.bash"
sim_args sim_philly.sh philly.csv "$@"
NODES=${NODES:-"32 64 128"}
POLICY=${POLICY:-pack}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[ -n "$KEEP" ] && mkdir -p "$KEEP"

echo "# tide-sim philly, policy $POLICY, 8 GPUs per node; program: $SIM"
echo
echo "| nodes | queue | mean wait (s) | p99 wait (s) | mean completion (s) | utilisation % | run time (s) |"
echo "|---|---|---|---|---|---|---|"
for n in $NODES; do
    for q in fifo backfill easy:1 easy:2; do
        mode=${q%%:*}
        args=(--queue "$mode")
        name=$mode
        if [ "$mode" = easy ]; then args+=(--limit-factor "${q#*:}"); name="easy ${q#*:}x"; fi
        tag=${q/:/}
        start=$(date +%s.%N)
        "$SIM" philly --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes "$n" \
            --policy "$POLICY" "${args[@]}" --waits "$OUT/philly.$n.$tag.waits" \
            >"$OUT/$n.$tag.txt" 2>/dev/null
        end=$(date +%s.%N)
        awk -F': ' -v n="$n" -v q="$name" -v s="$start" -v e="$end" '
            { v[$1] = $2 }
            END { printf "| %d | %s | %\047.0f | %\047.0f | %\047.0f | %.2f | %.2f |\n", n, q,
                  v["mean_wait_s"], v["p99_wait_s"], v["mean_completion_s"],
                  v["gpu_utilisation_pct"], e - s }' "$OUT/$n.$tag.txt"
        [ -n "$KEEP" ] && cp "$OUT/philly.$n.$tag.waits" "$KEEP/"
    done
done
