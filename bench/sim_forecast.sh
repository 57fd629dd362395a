#!/usr/bin/env bash
# How right the engine's forecast is (docs/sim.md#forecast-accuracy): the
# Philly replay (pack, backfill, 8 GPUs per node) asks tide_forecast() at
# each arrival when the new jobs start, with time limits of 1x and 2x
# their true run time, and compares with their real starts.  Prints a
# Markdown table, one row per nodes x factor.
# Usage:
#   bash bench/sim_forecast.sh [--out DIR] [TRACES_DIR]
# Environment: TIDE_SIM; WINDOWS, one NODES:FROM:DAYS per cluster size
# (forecast the arrivals of days FROM to FROM+DAYS, counted from the
# trace's first arrival; DAYS 0: every arrival), default "64:20:3 128:0:0"
# (on 64 nodes thousands of jobs wait from day 22 on, and each forecast
# then steps through thousands of ends: about 15 minutes for the 3 days
# on a shared 2-core VM, 2 minutes for the whole trace on 128 nodes);
# FACTORS (default "1 2").  --out DIR keeps each run's summary and its
# per-job forecasts (forecast.NODES.FACTOR.txt, .csv).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/sim_lib.bash"
sim_args sim_forecast.sh philly.csv "$@"
WINDOWS=${WINDOWS:-"64:20:3 128:0:0"}
FACTORS=${FACTORS:-"1 2"}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "# tide-sim philly --forecast, pack, backfill, 8 GPUs per node; program: $SIM"
echo
echo "| nodes | limits | arrivals of days | jobs forecast | no answer | \|error\| median (s) | \|error\| p90 (s) | signed median (s) | \|error\| p99 / mean (s) | early / late % | waited: jobs | waited: \|error\| median / p90 (s) | waited: signed median (s) | waited: early / late % | forecast time (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for w in $WINDOWS; do
    IFS=: read -r n from days <<<"$w"
    for f in $FACTORS; do
        tag=$n.$f
        "$SIM" philly --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes "$n" --policy pack \
            --forecast --limit-factor "$f" --forecast-from "$from" --forecast-days "$days" \
            --forecasts "$OUT/forecast.$tag.csv" --verbose >"$OUT/forecast.$tag.txt" 2>"$OUT/forecast.$tag.err"
        secs=$(sed -n 's/.* forecasts, .* decides in them, \([0-9.]*\) s$/\1/p' "$OUT/forecast.$tag.err")
        awk -F': ' -v n="$n" -v f="$f" -v from="$from" -v days="$days" -v secs="$secs" '
            { v[$1] = $2 }
            END {
                win = days + 0 > 0 ? sprintf("%g to %g", from, from + days) : "all"
                printf "| %d | %gx | %s | %\047d | %d unknown, %d never | %\047d | %\047d | %+\047d | %\047d / %\047d | %.1f / %.1f | %\047d | %\047d / %\047d | %+\047d | %.1f / %.1f | %.1f |\n",
                    n, f, win, v["forecast_asked"], v["forecast_null_unknown"], v["forecast_null_never"],
                    v["forecast_abs_median_s"], v["forecast_abs_p90_s"], v["forecast_signed_median_s"],
                    v["forecast_abs_p99_s"], v["forecast_abs_mean_s"], v["forecast_early_pct"], v["forecast_late_pct"], v["forecast_waited_jobs"],
                    v["forecast_waited_abs_median_s"], v["forecast_waited_abs_p90_s"],
                    v["forecast_waited_signed_median_s"], v["forecast_waited_early_pct"],
                    v["forecast_waited_late_pct"], secs }' "$OUT/forecast.$tag.txt"
        if [ -n "$KEEP" ]; then
            mkdir -p "$KEEP"
            cp "$OUT/forecast.$tag.txt" "$OUT/forecast.$tag.csv" "$KEEP/"
        fi
    done
done
