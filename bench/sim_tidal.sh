#!/usr/bin/env bash
# The tidal replay (seed 002's scenario, docs/sim.md#tidal-inference-reclaims-training):
# the Philly trace's jobs of days FROM to FROM+DAYS as preemptable training,
# inference services arriving with a daily rhythm that reclaim from it
# (R-E2), with R-E4's least harm and with the order it replaced
# (--legacy-order).  Prints a Markdown table, one row per nodes x peak x
# order, each figure over SEEDS seeds (the ratios of the sums; means of
# the rest, the waits' median and p90 each seed's own).
# Usage:
#   bash bench/sim_tidal.sh [--out DIR] [TRACES_DIR]
# Environment: TIDE_SIM, NODES (default "64 128"), PEAKS (inference peak
# as a share of the cluster's GPUs, default "0.5 0.8"), SEEDS (default
# "1 2 3"), FROM (first day, default 20), DAYS (default 14).
# --out DIR keeps each run's summary (tidal.NODES.PEAK.ORDER.SEED.txt).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/sim_lib.bash"
sim_args sim_tidal.sh philly.csv "$@"
NODES=${NODES:-"64 128"}
PEAKS=${PEAKS:-"0.5 0.8"}
SEEDS=${SEEDS:-"1 2 3"}
FROM=${FROM:-20}
DAYS=${DAYS:-14}
OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
[ -n "$KEEP" ] || trap 'rm -rf "$OUT"' EXIT

echo "# tide-sim tidal, days $FROM to $(awk -v a="$FROM" -v b="$DAYS" 'BEGIN { print a + b }') of the Philly trace, 8 GPUs per node, pack, seeds $SEEDS; program: $SIM"
echo
echo "| nodes | inference peak | order | evictions | training jobs evicted | GPUs evicted / held for | thrown away (GPU-h) | reclaimed (GPU-h) | thrown per reclaimed | thrown per inference GPU-h | thrown GPU-h per held GPU | inference wait mean / median / p90 / p99 (s) | training mean wait (s) | run time (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $NODES; do
    for p in $PEAKS; do
        for order in least-harm legacy; do
            flag=
            [ "$order" = legacy ] && flag=--legacy-order
            start=$(date +%s.%N)
            for seed in $SEEDS; do
                "$SIM" tidal --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes "$n" --policy pack \
                    --from-day "$FROM" --days "$DAYS" --inference-peak "$p" --seed "$seed" $flag \
                    >"$OUT/tidal.$n.$p.$order.$seed.txt"
            done
            end=$(date +%s.%N)
            cat "$OUT"/tidal.$n.$p.$order.*.txt | awk -F': ' -v n="$n" -v p="$p" -v o="$order" \
                -v s="$start" -v e="$end" -v seeds="$(echo $SEEDS | wc -w)" '
                { v[$1] += $2 }
                END {
                    printf "| %d | %s | %s | %.0f | %.0f | %.0f / %.0f | %.0f | %.0f | %.3f | %.3f | %.3f | %.0f / %.0f / %.0f / %.0f | %.0f | %.1f |\n",
                        n, p, o, v["evictions"] / seeds, v["training_jobs_evicted"] / seeds,
                        v["evicted_gpus"] / seeds, v["held_for_gpus"] / seeds,
                        v["thrown_away_gpu_h"] / seeds, v["reclaimed_gpu_h"] / seeds,
                        (v["reclaimed_gpu_h"] > 0 ? v["thrown_away_gpu_h"] / v["reclaimed_gpu_h"] : 0),
                        (v["inference_gpu_h"] > 0 ? v["thrown_away_gpu_h"] / v["inference_gpu_h"] : 0),
                        (v["held_for_gpus"] > 0 ? v["thrown_away_gpu_h"] / v["held_for_gpus"] : 0),
                        v["inference_mean_wait_s"] / seeds, v["inference_median_wait_s"] / seeds,
                        v["inference_p90_wait_s"] / seeds, v["inference_p99_wait_s"] / seeds,
                        v["training_mean_wait_s"] / seeds, (e - s) / seeds }'
        done
    done
done
