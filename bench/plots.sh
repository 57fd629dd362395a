#!/usr/bin/env bash
# Render the simulator's pictures into docs/img/ with gnuplot (Debian's
# gnuplot-nox): GPU allocation against arrival on every openb variant for
# each engine policy, beside the simulator's FGD reference and the
# published FGD and BestFit figures (traces/README.md gives them at 90, 100
# and 130% arrival only, so they are drawn as points); the Philly wait
# distribution per queueing discipline; and fair share over time on
# Philly's virtual clusters (Jain's index per day, p99 wait per queue).
# Usage:
#   bash bench/plots.sh [--quick] [--data DIR]
# Runs bench/sim_openb.sh, bench/sim_philly.sh and bench/sim_philly_fair.sh
# first (--quick: 2 seeds), unless --data names a directory their --out
# already filled; then draws what that directory holds.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
QUICK= DATA=
while [ $# -gt 0 ]; do
    case $1 in
        --quick) QUICK=--quick ;;
        --data) DATA=$2; shift ;;
        --data=*) DATA=${1#--data=} ;;
        *) echo "plots.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
command -v gnuplot >/dev/null || { echo "plots.sh: no gnuplot (apt-get install -y gnuplot-nox)" >&2; exit 2; }
if [ -z "$DATA" ]; then
    DATA=$(mktemp -d)
    trap 'rm -rf "$DATA"' EXIT
    bash "$SRC/bench/sim_openb.sh" $QUICK --out "$DATA"
    bash "$SRC/bench/sim_philly.sh" --out "$DATA"
    bash "$SRC/bench/sim_philly_fair.sh" --out "$DATA"
fi
IMG=$SRC/docs/img
mkdir -p "$IMG"

# published means (10 seeds, default trace): arrived BestFit FGD
cat >"$DATA/paper.dat" <<'PAPER'
90 89.99 89.98
100 92.86 95.23
130 93.08 95.39
PAPER

for f in "$DATA"/*.pack.dat; do
    [ -e "$f" ] || continue
    v=$(basename "$f" .pack.dat)
    paper=
    [ "$v" = default ] && paper=1
    lines() {
        local out="'$DATA/$v.pack.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'pack (engine)'"
        [ -f "$DATA/$v.frag.dat" ] &&
            out+=", '$DATA/$v.frag.dat' using 1:2 with lines lw 2 lc rgb '#d62728' title 'frag (engine)'"
        [ "$1" = all ] && [ -f "$DATA/$v.spread.dat" ] &&
            out+=", '$DATA/$v.spread.dat' using 1:2 with lines lw 2 lc rgb '#7f7f7f' title 'spread (engine)'"
        [ -f "$DATA/$v.fgd.dat" ] &&
            out+=", '$DATA/$v.fgd.dat' using 1:2 with lines lw 1 dt 2 lc rgb '#2ca02c' title 'fgd (simulator reference)'"
        if [ -n "$paper" ]; then
            out+=", '$DATA/paper.dat' using 1:3 with points pt 7 ps 1.6 lc rgb '#ff7f0e' title 'FGD, published'"
            out+=", '$DATA/paper.dat' using 1:2 with points pt 5 ps 1.4 lc rgb '#9467bd' title 'BestFit, published'"
        fi
        out+=", x with lines lw 1 dt 3 lc rgb '#000000' title 'every arrival placed'"
        echo "$out"
    }
    gnuplot <<GP
set terminal pngcairo size 1000,620 font 'DejaVu Sans,12'
set output '$IMG/openb_$v.png'
set title "openb $v: GPU allocation as pods arrive (mean of the seeds)"
set xlabel 'GPUs asked by the arrived pods (% of the cluster)'
set ylabel 'GPUs allocated (% of the cluster)'
set key bottom right
set grid
set xrange [70:130]
set yrange [70:100]
plot $(lines all)
GP
    # the last stretch, where the policies part
    gnuplot <<GP
set terminal pngcairo size 1000,620 font 'DejaVu Sans,12'
set output '$IMG/openb_${v}_zoom.png'
set title "openb $v: 90 to 130% arrival (mean of the seeds)"
set xlabel 'GPUs asked by the arrived pods (% of the cluster)'
set ylabel 'GPUs allocated (% of the cluster)'
set key bottom right
set grid
set xrange [90:130]
set yrange [88:97]
plot $(lines zoom)
GP
done

# Philly: the wait distribution per queueing discipline (CDF), one panel per size
cdf() {
    awk '{ w[NR] = $1 } END { for (i = 1; i <= NR; i += (NR > 2000 ? int(NR / 2000) : 1))
        printf "%g %g\n", w[i] + 1, i / NR; printf "%g 1\n", w[NR] + 1 }' "$1" >"$1.cdf"
}
if ls "$DATA"/philly.*.waits >/dev/null 2>&1; then
for f in "$DATA"/philly.*.waits; do cdf "$f"; done
nodes=$(ls "$DATA"/philly.*.waits | sed 's/.*philly\.\([0-9]*\)\..*/\1/' | sort -n | uniq)
{
    echo "set terminal pngcairo size 1400,520 font 'DejaVu Sans,12'"
    echo "set output '$IMG/philly_waits.png'"
    echo "set multiplot layout 1,$(echo $nodes | wc -w) title 'Philly trace, pack, 8 GPUs per node: share of jobs that waited at most x'"
    echo "set logscale x"
    echo "set xrange [1:1e7]"
    echo "set yrange [0:1]"
    echo "set format x '10^{%L}'"
    echo "set xlabel 'wait + 1 (s)'"
    echo "set grid"
    echo "set key top left"
    for n in $nodes; do
        echo "set title '$n nodes'"
        echo "plot '$DATA/philly.$n.fifo.waits.cdf' using 1:2 with lines lw 2 title 'strict FIFO', \
'$DATA/philly.$n.backfill.waits.cdf' using 1:2 with lines lw 2 title 'backfill', \
'$DATA/philly.$n.easy1.waits.cdf' using 1:2 with lines lw 2 title 'EASY, limit 1x', \
'$DATA/philly.$n.easy2.waits.cdf' using 1:2 with lines lw 2 dt 2 title 'EASY, limit 2x'"
    done
    echo "unset multiplot"
} | gnuplot
fi

# Philly, fair share over time (bench/sim_philly_fair.sh --out): Jain's
# index per day on 64 nodes for each half-life, one panel per queue layout;
# each queue's p99 wait per half-life, one panel per cluster size (tree)
if ls "$DATA"/fair.64.*.csv >/dev/null 2>&1; then
    hls="0 86400 604800"
    hl_title() { case $1 in 0) echo "half-life 0" ;; 86400) echo "1 day" ;; 604800) echo "7 days" ;; *) echo "$1 s" ;; esac; }
    for f in "$DATA"/fair.*.csv; do
        awk -F, 'NR > 1 && !seen[$1]++ { print $1, $7 }' "$f" >"${f%.csv}.jain"
    done
    variants=$(for v in tree flat; do [ -f "$DATA/fair.64.$v.0.csv" ] && echo $v; done)
    {
        echo "set terminal pngcairo size 1400,560 font 'DejaVu Sans,12'"
        echo "set output '$IMG/philly_fair_jain.png'"
        echo "set multiplot layout 1,$(echo $variants | wc -w) title \"Philly, 15 virtual clusters as queues, 64 nodes of 8 GPUs: Jain's index of each day (capped entitlement form)\""
        echo "set xlabel 'day of the trace'"
        echo "set ylabel 'J_d'"
        echo "set yrange [0.6:1.02]"
        echo "set grid"
        echo "set key bottom left"
        for v in $variants; do
            if [ "$v" = tree ]; then echo "set title 'tree: 3 organisations'"; else echo "set title 'flat: 15 queues side by side'"; fi
            plot="plot"
            sep=
            for h in $hls; do
                plot+="$sep '$DATA/fair.64.$v.$h.jain' using 1:2 with linespoints lw 1.5 pt 7 ps 0.5 title '$(hl_title "$h")'"
                sep=,
            done
            echo "$plot"
        done
        echo "unset multiplot"
    } | gnuplot
    sizes=$(for n in 64 128; do [ -f "$DATA/fair.$n.tree.0.txt" ] && echo $n; done)
    for n in $sizes; do
        # queue (largest quota first), then p99 wait + 1 s per half-life
        tail -n +2 "$DATA/queues.$n.flat.csv" | while IFS=, read -r name _ quota; do
            row="\"$name ($quota)\""
            for h in $hls; do
                row+=" $(awk -v q="queue.$name:" '$1 == q { gsub(",", ""); print $7 + 1 }' "$DATA/fair.$n.tree.$h.txt")"
            done
            echo "$row"
        done >"$DATA/fair.$n.p99"
    done
    {
        echo "set terminal pngcairo size 1400,$((380 * $(echo $sizes | wc -w) + 60)) font 'DejaVu Sans,11'"
        echo "set output '$IMG/philly_fair_wait.png'"
        echo "set multiplot layout $(echo $sizes | wc -w),1 title 'Philly, queue tree: p99 wait of each queue (quota in GPUs), per fair-share half-life'"
        echo "set style data histograms"
        echo "set style histogram clustered gap 1"
        echo "set style fill solid 0.8 border -1"
        echo "set logscale y"
        echo "set yrange [1:1e7]"
        echo "set format y '10^{%L}'"
        echo "set ylabel 'p99 wait + 1 (s)'"
        echo "set xtics rotate by -30"
        echo "set grid ytics"
        echo "set key top right"
        for n in $sizes; do
            echo "set title '$n nodes ($((n * 8)) GPUs)'"
            echo "plot '$DATA/fair.$n.p99' using 2:xtic(1) title '$(hl_title 0)', '' using 3 title '$(hl_title 86400)', '' using 4 title '$(hl_title 604800)'"
        done
        echo "unset multiplot"
    } | gnuplot
fi
ls -l "$IMG"
