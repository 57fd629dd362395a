#!/usr/bin/env bash
# Synthetic openb pod lists in the spirit of the FGD paper's trace variants,
# made from the default pod list, to check that a placement policy is not
# tuned to the lists at hand.  Usage:
#   bash bench/openb_variants.sh OUTDIR [TRACES_DIR]
# Writes OUTDIR/openb_pod_list_VARIANT.csv for:
#   multigpu30  30% of the GPUs asked by pods of several GPUs (default: 7%)
#   gpushare60  60% of the GPUs asked by pods sharing one GPU (default: 28%)
#   gpuspec25   a quarter of the GPU pods restricted to card models
#               (gpu_spec: one model, or two separated by '|')
#   cpu200      twice the CPU-only pods (CPU-heavy cluster)
# The GPUs asked in total stay those of the default list (within one pod),
# so the runs' arrival percentages compare.  Pods are drawn with a fixed
# generator (Park-Miller, exact in awk's doubles): the same files on every
# machine and awk.
set -euo pipefail

OUT=${1:?usage: openb_variants.sh OUTDIR [TRACES_DIR]}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRACES=${2:-}
if [ -z "$TRACES" ]; then
    for d in "$SRC/../shared/traces" "$SRC/../../shared/traces"; do
        if [ -f "$d/openb_pod_list_default.csv" ]; then TRACES=$d; break; fi
    done
fi
[ -n "$TRACES" ] && [ -f "$TRACES/openb_pod_list_default.csv" ] ||
    { echo "openb_variants.sh: no traces directory (give it as the second argument)" >&2; exit 2; }
mkdir -p "$OUT"
POD=$TRACES/openb_pod_list_default.csv
NODE=$TRACES/openb_node_list_gpu_node.csv

# Resample: keep every pod outside the two pools; draw from pool "a" (pods
# matching the class) until it asks frac of the GPUs, from pool "b" (the
# other GPU pods) for the rest.  class: multi (num_gpu > 1), share
# (gpu_milli < 1000).
resample() {
    awk -F, -v OFS=, -v class="$1" -v frac="$2" -v seed="$3" -v tag="$4" '
    function rnd() { state = (state * 48271) % 2147483647; return state / 2147483647 }
    function pick(n) { return int(rnd() * n) + 1 }
    NR == 1 { print; ncol = NF; state = seed; next }
    {
        g = $4 * $5
        total += g
        if ($4 == 0) { keep[++nk] = $0; next }
        inA = (class == "multi") ? ($4 > 1) : ($4 == 1 && $5 < 1000)
        if (inA) a[++na] = $0; else b[++nb] = $0
    }
    END {
        want = frac * total; got = 0
        while (got < want) { split(a[pick(na)], f, ","); emit(f); got += f[4] * f[5] }
        while (got < total) { split(b[pick(nb)], f, ","); emit(f); got += f[4] * f[5] }
        for (i = 1; i <= nk; i++) { split(keep[i], f, ","); emit(f) }
    }
    function emit(f,   i, line) {
        line = sprintf("%s-pod-%05d", tag, ++seq)
        for (i = 2; i <= ncol; i++) line = line "," f[i]
        print line
    }' "$POD"
}

resample multi 0.30 11 multigpu30 >"$OUT/openb_pod_list_multigpu30.csv"
resample share 0.60 12 gpushare60 >"$OUT/openb_pod_list_gpushare60.csv"

# A quarter of the GPU pods get a gpu_spec: a model drawn by its share of
# the cluster's GPUs among the models with a node of enough GPUs, CPU and
# memory for the pod; one time in four a second model too ("A|B").
awk -F, -v OFS=, -v seed=13 '
function rnd() { state = (state * 48271) % 2147483647; return state / 2147483647 }
function draw(cpu, mem, ng,   i, m, t, r) {
    t = 0
    for (i = 1; i <= nm; i++) { m = model[i]; if (maxg[m] >= ng && fits(m, cpu, mem, ng)) t += gpus[m] }
    if (t == 0) return ""
    r = rnd() * t
    for (i = 1; i <= nm; i++) { m = model[i]; if (maxg[m] >= ng && fits(m, cpu, mem, ng)) { r -= gpus[m]; if (r < 0) return m } }
    return ""
}
function fits(m, cpu, mem, ng,   k) {
    for (k = 1; k <= nn; k++)
        if (nmod[k] == m && ncpu[k] >= cpu && nmem[k] >= mem && ngpu[k] >= ng) return 1
    return 0
}
NR == FNR { if (FNR > 1) { nn++; ncpu[nn] = $2; nmem[nn] = $3; ngpu[nn] = $4; nmod[nn] = $5
            if (!($5 in gpus)) model[++nm] = $5
            gpus[$5] += $4; if ($4 > maxg[$5]) maxg[$5] = $4 }; next }
FNR == 1 { print; state = seed; next }
{
    if ($4 > 0 && rnd() < 0.25) {
        m = draw($2, $3, $4)
        if (m != "" && rnd() < 0.25) { m2 = draw($2, $3, $4); if (m2 != "" && m2 != m) m = m "|" m2 }
        $6 = m
    }
    $1 = "gpuspec25-pod-" sprintf("%05d", FNR - 1)
    print
}' "$NODE" "$POD" >"$OUT/openb_pod_list_gpuspec25.csv"

# Twice the CPU-only pods: each listed twice.
awk -F, -v OFS=, 'NR == 1 { print; next }
    { print; if ($4 == 0) { $1 = $1 "-b"; print } }' "$POD" >"$OUT/openb_pod_list_cpu200.csv"

for f in multigpu30 gpushare60 gpuspec25 cpu200; do
    awk -F, -v f="$f" 'NR > 1 { n++; g += $4 * $5; c += $2; if ($4 > 1) m += $4 * $5
        if ($4 == 1 && $5 < 1000) s += $5; if ($4 == 0) z++; if ($6 != "") sp++ }
        END { printf "%s: %d pods, %.0f GPUs asked (%.0f%% multi-GPU, %.0f%% shares), %d CPU-only, %d with gpu_spec, %.0f cores\n",
              f, n, g / 1000, 100 * m / g, 100 * s / g, z, sp, c / 1000 }' "$OUT/openb_pod_list_$f.csv"
done
