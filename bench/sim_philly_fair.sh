#!/usr/bin/env bash
# Fair share over time on the Philly trace (docs/design/organisations.md,
# section 9): the 15 virtual clusters as queues, quotas proportional to
# their GPU-time demand, under 3 organisations (tree) or side by side
# (flat), replayed with fair-share half-life 0, 1 day and 7 days on 64 and
# 128 nodes of 8 GPUs (policy pack, backfill).  Prints Markdown tables:
# Jain's index over one-day windows (mean and 10th percentile over the
# days), waits, utilisation, run time; then each queue's mean and p99 wait.
# Usage:
#   bash bench/sim_philly_fair.sh [--out DIR] [TRACES_DIR]
# --out DIR keeps the queue files (queues.NODES.tree.csv, .flat.csv), each
# run's summary and --fair file (fair.NODES.VARIANT.HALFLIFE.txt, .csv)
# for bench/plots.sh.  Environment: TIDE_SIM, NODES (default "64 128"),
# HALF_LIVES (seconds, default "0 86400 604800"), VARIANTS ("tree flat").
#
# The queue file, from the trace alone (so it is the same every time):
# demand = sum of num_gpus x duration per cluster; each cluster gets 1 GPU,
# and the other G - 15 GPUs (G = the cluster's) are shared in proportion
# to demand by largest remainder (ties: larger demand, then name); the
# organisations are made by longest processing time: clusters by demand,
# largest first, each to the organisation with the least demand so far
# (ties: the lower number); an organisation's quota is its children's sum.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/sim_lib.bash"
sim_args sim_philly_fair.sh philly.csv "$@"
NODES=${NODES:-"64 128"}
HALF_LIVES=${HALF_LIVES:-"0 86400 604800"}
VARIANTS=${VARIANTS:-"tree flat"}
ORGS=3
if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    OUT=$KEEP
else
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
fi

# demand per cluster, largest first (ties by name)
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NF >= 5 && $c["cluster"] != "" { d[$c["cluster"]] += $c["num_gpus"] * $c["duration"] }
    END { for (k in d) printf "%s %.3f\n", k, d[k] }' "$TRACES/philly.csv" |
    sort -k2,2gr -k1,1 >"$OUT/demand.txt"

# queues.NODES.tree.csv and queues.NODES.flat.csv for a cluster of G GPUs
write_queues() {
    local n=$1 g=$(($1 * 8))
    awk -v G="$g" -v ORGS="$ORGS" '
        { n++; name[n] = $1; dem[n] = $2; D += $2 }
        END {
            R = G - n
            for (i = 1; i <= n; i++) { ex = dem[i] / D * R; q[i] = int(ex); fr[i] = ex - q[i]; s += q[i] }
            for (k = 0; k < R - s; k++) {
                b = 0
                for (i = 1; i <= n; i++) if (!got[i] && (b == 0 || fr[i] > fr[b])) b = i
                got[b] = 1; q[b]++
            }
            for (i = 1; i <= n; i++) q[i]++
            for (i = 1; i <= n; i++) {
                b = 1
                for (o = 2; o <= ORGS; o++) if (od[o] < od[b]) b = o
                od[b] += dem[i]; org[i] = b; oq[b] += q[i]
            }
            print "name,parent,quota_gpus" >tree; print "name,parent,quota_gpus" >flat
            for (o = 1; o <= ORGS; o++) print "org" o ",," oq[o] >tree
            for (i = 1; i <= n; i++) { print name[i] ",org" org[i] "," q[i] >tree; print name[i] ",," q[i] >flat }
        }' tree="$OUT/queues.$n.tree.csv" flat="$OUT/queues.$n.flat.csv" "$OUT/demand.txt"
}

hl_name() {
    case $1 in 0) echo 0 ;; 86400) echo "1 day" ;; 604800) echo "7 days" ;; *) echo "$1 s" ;; esac
}

echo "# tide-sim philly, 15 virtual clusters as queues ($ORGS organisations in the tree), pack, backfill, 8 GPUs per node; program: $SIM"
echo
echo "| nodes | queues | half-life | mean J_d | p10 J_d | mean J_d uncapped | mean J_d orgs | mean wait (s) | worst queue p99 wait (s) | utilisation % | run time (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $NODES; do
    write_queues "$n"
    for v in $VARIANTS; do
        for h in $HALF_LIVES; do
            tag=$n.$v.$h
            start=$(date +%s.%N)
            "$SIM" philly --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes "$n" --policy pack \
                --queues "$OUT/queues.$n.$v.csv" --half-life "$h" --fair "$OUT/fair.$tag.csv" \
                >"$OUT/fair.$tag.txt" 2>"$OUT/fair.$tag.err"
            end=$(date +%s.%N)
            awk -F': ' -v n="$n" -v q="$v" -v h="$(hl_name "$h")" -v s="$start" -v e="$end" '
                { v[$1] = $2 }
                END { printf "| %d | %s | %s | %.4f | %.4f | %.4f | %s | %\047.0f | %\047.0f (%s) | %.2f | %.2f |\n",
                      n, q, h, v["jain_mean"], v["jain_p10"], v["jain_uncapped_mean"],
                      ("jain_top_mean" in v) ? sprintf("%.4f", v["jain_top_mean"]) : "",
                      v["mean_wait_s"], v["worst_p99_wait_s"], v["worst_p99_queue"],
                      v["gpu_utilisation_pct"], e - s }' "$OUT/fair.$tag.txt"
        done
    done
done

# each queue's waits, mean / p99, one column per run: in hours, or in
# seconds when no p99 reaches an hour
for n in $NODES; do
    unit=$(cat "$OUT"/fair.$n.*.txt | awk '/^queue\./ { gsub(",", ""); if ($7 >= 3600) h = 1 } END { print h ? 3600 : 1 }')
    echo
    echo "Waits per queue on $n nodes, $([ "$unit" = 1 ] && echo seconds || echo hours) (mean / p99):"
    echo
    head="| queue | quota |"
    rule="|---|---|"
    for v in $VARIANTS; do for h in $HALF_LIVES; do
        head+=" $v, $(hl_name "$h") |"; rule+="---|"
    done; done
    echo "$head"
    echo "$rule"
    tail -n +2 "$OUT/queues.$n.flat.csv" | while IFS=, read -r name _ quota; do
        row="| $name | $quota |"
        for v in $VARIANTS; do for h in $HALF_LIVES; do
            row+=$(awk -v q="queue.$name:" -v u="$unit" '$1 == q { gsub(",", ""); printf " %.1f / %.1f |", $5 / u, $7 / u }' \
                "$OUT/fair.$n.$v.$h.txt")
        done; done
        echo "$row"
    done
done
