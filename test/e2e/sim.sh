#!/usr/bin/env bash
# tide-sim end to end: runs the simulator (installed, or built in the source
# tree; $TIDE_SIM overrides) on slices of the real traces and on small hand-made files; prints
# TAP.  Needs no database.  Traces: $TIDE_TRACES, else
# $TIDE_SRC/../shared/traces (CI), else $TIDE_SRC/../../shared/traces (a
# worktree).
set -uo pipefail

. "$(dirname "$0")/sim_lib.bash" openb_node_list_gpu_node.csv

NODES=$TRACES/openb_node_list_gpu_node.csv
PODS=$TRACES/openb_pod_list_default.csv
# a slice: the first 120 nodes and 1,500 pods
head -n 121 "$NODES" >"$WORK/nodes.csv"
head -n 1501 "$PODS" >"$WORK/pods.csv"

# --- help ---
"$SIM" --help >"$WORK/help" 2>&1; st=$?
check "--help exits 0" test $st -eq 0
check "--help names both commands" grep -q "tide-sim philly" "$WORK/help"

# --- openb on the slice ---
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 >"$WORK/o1" 2>"$WORK/o1.err"; st=$?
check "openb on a slice exits 0" test $st -eq 0
check "openb CSV header" test "$(head -n 1 "$WORK/o1")" = "arrived_pct,allocated_pct,fragmented_pct"
check "openb one row per whole percent up to 130" test "$(tail -n +2 "$WORK/o1" | wc -l)" -eq 130
check "openb arrived_pct is 1, 2, ... 130" \
    awk -F, 'NR > 1 && $1 != NR - 1 { bad = 1 } END { exit bad }' "$WORK/o1"
check "openb allocated_pct <= arrived_pct on every row" \
    awk -F, 'NR > 1 && $2 > $1 + 1e-9 { bad = 1 } END { exit bad }' "$WORK/o1"
check "openb allocated_pct never decreases (nothing leaves)" \
    awk -F, 'NR > 2 && $2 < prev { bad = 1 } NR > 1 { prev = $2 } END { exit bad }' "$WORK/o1"
check "openb fragmented_pct in [0, 100 - allocated_pct]" \
    awk -F, 'NR > 1 && ($3 < 0 || $2 + $3 > 100.0001) { bad = 1 } END { exit bad }' "$WORK/o1"
check "openb fills the slice past 50% of its GPUs" \
    awk -F, '$1 == 130 && $2 > 50 { good = 1 } END { exit !good }' "$WORK/o1"
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 >"$WORK/o2" 2>&1
check "openb same seed, same output" cmp -s "$WORK/o1" "$WORK/o2"
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 8 >"$WORK/o3" 2>&1
check "openb another seed, another output" test "$(md5sum <"$WORK/o1")" != "$(md5sum <"$WORK/o3")"
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 --max-arrival 0.5 >"$WORK/o4" 2>&1
check "openb --max-arrival 0.5 stops at 50%" test "$(tail -n 1 "$WORK/o4" | cut -d, -f1)" = 50
check "openb --max-arrival 0.5 is a prefix of the 1.3 run" \
    test "$(head -n 51 "$WORK/o1")" = "$(head -n 51 "$WORK/o4")"

# --- openb on the whole default trace: pack keeps more allocated than spread ---
"$SIM" openb --nodes "$NODES" --pods "$PODS" --seed 1 --policy pack >"$WORK/pack" 2>&1
"$SIM" openb --policy=spread --nodes "$NODES" --pods "$PODS" --seed 1 >"$WORK/spread" 2>&1; st=$?
check "openb --policy=spread exits 0" test $st -eq 0
a_pack=$(awk -F, '$1 == 100 { print $2 }' "$WORK/pack")
a_spread=$(awk -F, '$1 == 100 { print $2 }' "$WORK/spread")
echo "# allocated at 100% arrival: pack $a_pack, spread $a_spread"
check "openb pack allocates more than spread at 100% arrival" \
    awk -v a="$a_pack" -v b="$a_spread" 'BEGIN { exit !(a > b && a > 85) }'

# --- openb --policy fgd (the simulator's reference FGD scorer, pinned through the engine) ---
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 --policy fgd >"$WORK/f1" 2>&1; st=$?
check "openb --policy fgd exits 0" test $st -eq 0
check "openb fgd: 130 rows, allocated <= arrived" \
    awk -F, 'NR > 1 && ($2 > $1 + 1e-9 || $1 != NR - 1) { bad = 1 } END { exit bad || NR != 131 }' "$WORK/f1"
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 --policy fgd >"$WORK/f2" 2>&1
check "openb fgd: same seed, same output" cmp -s "$WORK/f1" "$WORK/f2"
"$SIM" openb --nodes "$NODES" --pods "$PODS" --seed 1 --policy fgd --verbose >"$WORK/f3" 2>"$WORK/f3.err"
check "openb fgd: the engine accepts every pinned pod" grep -q " 0 pinned pods refused by the engine" "$WORK/f3.err"

# --- openb --policy frag (the engine's fragmentation-aware order) ---
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 --policy frag >"$WORK/g1" 2>&1; st=$?
check "openb --policy frag exits 0" test $st -eq 0
check "openb frag: 130 rows, allocated <= arrived" \
    awk -F, 'NR > 1 && ($2 > $1 + 1e-9 || $1 != NR - 1) { bad = 1 } END { exit bad || NR != 131 }' "$WORK/g1"
"$SIM" openb --nodes "$WORK/nodes.csv" --pods "$WORK/pods.csv" --seed 7 --policy frag >"$WORK/g2" 2>&1
check "openb frag: same seed, same output" cmp -s "$WORK/g1" "$WORK/g2"
"$SIM" openb --nodes "$NODES" --pods "$PODS" --seed 1 --policy frag >"$WORK/frag" 2>&1
a_frag=$(awk -F, '$1 == 130 { print $2 }' "$WORK/frag")
p_pack=$(awk -F, '$1 == 130 { print $2 }' "$WORK/pack")
echo "# allocated at 130% arrival, seed 1: frag $a_frag, pack $p_pack"
check "openb frag allocates at least 0.8 points more than pack at 130% (seed 1)" \
    awk -v a="$a_frag" -v b="$p_pack" 'BEGIN { exit !(a >= b + 0.8) }'

# --- gpu_spec restricts GPU models: a T4 node of 2 GPUs and a G2 node of 8 ---
printf 'sn,cpu_milli,memory_mib,gpu,model\nn-t4,64000,262144,2,T4\nn-g2,96000,393216,8,G2\n' >"$WORK/spec_nodes.csv"
spec_run() {  # spec -> allocated_pct at 130% for 1-GPU pods restricted to spec
    { echo "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos"
      for i in 1 2 3 4 5; do echo "p$i,1000,1024,1,1000,$1,LS"; done; } >"$WORK/spec_pods.csv"
    "$SIM" openb --nodes "$WORK/spec_nodes.csv" --pods "$WORK/spec_pods.csv" --policy "${2:-pack}" |
        awk -F, '$1 == 130 { print $2 }'
}
check "gpu_spec T4: only the T4 node's 2 of 10 GPUs" test "$(spec_run T4)" = 20.00
check "gpu_spec G2|G3: only the G2 node's 8 of 10 GPUs" test "$(spec_run 'G2|G3')" = 80.00
check "gpu_spec A100 (no such node): nothing placed" test "$(spec_run A100)" = 0.00
check "gpu_spec T4|G2 under fgd: every GPU" test "$(spec_run 'T4|G2' fgd)" = 100.00
check "gpu_spec T4 under frag: only the T4 node's GPUs" test "$(spec_run T4 frag)" = 20.00
check "gpu_spec T4|G2 under frag: every GPU" test "$(spec_run 'T4|G2' frag)" = 100.00
check "no gpu_spec: every GPU" test "$(spec_run '')" = 100.00

# --- philly: a hand-checked trace on 2 nodes of 8 GPUs ---
cat >"$WORK/jobs.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 00:00:00,100,8,800,a
2017-10-09 00:00:10,50,4,200,a
2017-10-09 00:00:20,10,8,80,a
2017-10-09 00:00:30,10,2,20,a
2017-10-09 00:00:30,10,32,20,b

2017-10-09 00:00:40,10,16,20,a
EOF
# t=0 J1(8) starts; t=10 J2(4); t=20 J3(8) waits; t=30 J4(2) backfills;
# t=60 J2 ends, J3 starts (waited 40); t=100 J1 ends, J6(16) starts (waited 60)
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 >"$WORK/p1" 2>"$WORK/p1.err"; st=$?
check "philly exits 0" test $st -eq 0
for f in jobs completed unschedulable mean_wait_s p99_wait_s mean_completion_s gpu_utilisation_pct; do
    check "philly summary has $f" grep -q "^$f: " "$WORK/p1"
done
check "philly jobs 6, completed 5, unschedulable 1" \
    test "$(val jobs "$WORK/p1")/$(val completed "$WORK/p1")/$(val unschedulable "$WORK/p1")" = 6/5/1
check "philly mean wait 20 s, p99 wait 60 s" \
    test "$(val mean_wait_s "$WORK/p1")/$(val p99_wait_s "$WORK/p1")" = 20.0/60.0
check "philly mean completion 56 s" test "$(val mean_completion_s "$WORK/p1")" = 56.0
check "philly utilisation 1260 GPU-s over 16 GPUs x 110 s" \
    test "$(val gpu_utilisation_pct "$WORK/p1")" = 71.59
check "philly reports the job bigger than the cluster with file:line" \
    grep -q "jobs.csv:6: job of 32 GPUs is unschedulable: the cluster has 16 GPUs" "$WORK/p1.err"
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --cluster a >"$WORK/p2" 2>&1
check "philly --cluster keeps one virtual cluster" test "$(val jobs "$WORK/p2")" = 5

# the same trace, strict FIFO: J4 (2 GPUs) waits behind J3 until t=70
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --queue fifo >"$WORK/q1" 2>/dev/null
check "philly fifo: waits 0/0/40/40/60 (mean 28 s), completion mean 64 s" \
    test "$(val mean_wait_s "$WORK/q1")/$(val p99_wait_s "$WORK/q1")/$(val mean_completion_s "$WORK/q1")" = 28.0/60.0/64.0
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --queue easy >"$WORK/q2" 2>/dev/null
check "philly easy: J4 ends (t=40) before J3's expected start (t=60) so it backfills: as backfill" \
    test "$(val mean_wait_s "$WORK/q2")/$(val p99_wait_s "$WORK/q2")/$(val mean_completion_s "$WORK/q2")" = 20.0/60.0/56.0
# J4 runs 50 s: it would end at t=80, after J3's expected start
sed 's/2017-10-09 00:00:30,10,2,20,a/2017-10-09 00:00:30,50,2,100,a/' "$WORK/jobs.csv" >"$WORK/jobs2.csv"
"$SIM" philly --jobs "$WORK/jobs2.csv" --gpus-per-node 8 --nodes 2 >"$WORK/q3" 2>/dev/null
check "philly backfill, long J4: J3 waits until J4 ends (waits 0/0/60/0/60)" \
    test "$(val mean_wait_s "$WORK/q3")/$(val p99_wait_s "$WORK/q3")" = 24.0/60.0
"$SIM" philly --jobs "$WORK/jobs2.csv" --gpus-per-node 8 --nodes 2 --queue easy --limit-factor 1 >"$WORK/q4" 2>/dev/null
check "philly easy, long J4: J3 keeps its reservation (waits 0/0/40/40/80)" \
    test "$(val mean_wait_s "$WORK/q4")/$(val p99_wait_s "$WORK/q4")/$(val mean_completion_s "$WORK/q4")" = 32.0/80.0/76.0
check "philly easy prints its queue and limit factor" \
    test "$(val queue "$WORK/q4")/$(val limit_factor "$WORK/q4")" = easy/1
"$SIM" philly --jobs "$WORK/jobs2.csv" --gpus-per-node 8 --nodes 2 --waits "$WORK/w4" >/dev/null 2>&1
check "philly --waits: the 5 completed jobs' waits, sorted" test "$(tr '\n' ' ' <"$WORK/w4")" = "0 0 0 60 60 "

# --- philly on a slice of the real trace ---
"$SIM" philly --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes 4 --limit 3000 >"$WORK/p3" 2>"$WORK/p3.err"; st=$?
check "philly slice exits 0" test $st -eq 0
check "philly slice: completed + unschedulable = jobs = 3000" \
    test "$(( $(val completed "$WORK/p3") + $(val unschedulable "$WORK/p3") ))/$(val jobs "$WORK/p3")" = 3000/3000
check "philly slice: utilisation in (0, 100]" \
    awk -v u="$(val gpu_utilisation_pct "$WORK/p3")" 'BEGIN { exit !(u > 0 && u <= 100) }'
"$SIM" philly --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes 4 --limit 3000 >"$WORK/p4" 2>/dev/null
check "philly same input, same summary" cmp -s "$WORK/p3" "$WORK/p4"

# --- bad input: clear errors, non-zero exit ---
expect_err() {  # name, exit code, message fragment, command...
    local name=$1 code=$2 msg=$3; shift 3
    "$@" >"$WORK/e.out" 2>"$WORK/e.err"; local st=$?
    if [ $st -eq "$code" ] && grep -qF -- "$msg" "$WORK/e.err"; then ok "$name"
    else notok "$name" "exit $st, stderr: $(head -c 300 "$WORK/e.err")"; fi
}
expect_err "unknown option: exit 2, names it" 2 'unknown option "--frob"' \
    "$SIM" openb --nodes "$NODES" --pods "$PODS" --frob
expect_err "unknown command: exit 2" 2 'unknown command "replay"' "$SIM" replay
expect_err "missing --pods: exit 2" 2 "--pods FILE is required" "$SIM" openb --nodes "$NODES"
expect_err "bad --seed: exit 2" 2 'option --seed: "x1" is not an integer' \
    "$SIM" openb --nodes "$NODES" --pods "$PODS" --seed x1
expect_err "unknown policy: exit 2, lists the known ones" 2 'unknown policy "best" (known: pack, spread, frag, fgd)' \
    "$SIM" openb --nodes "$NODES" --pods "$PODS" --policy best
expect_err "philly has no fgd policy" 2 'unknown policy "fgd" (known: pack, spread, frag)' \
    "$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --policy fgd
expect_err "missing file: exit 1, names it" 1 "cannot open $WORK/nope.csv" \
    "$SIM" openb --nodes "$WORK/nope.csv" --pods "$PODS"
{ head -n 3 "$PODS"; echo "openb-pod-x,12000,lots,1,1000,,LS,Running,0,1,0"; } >"$WORK/bad1.csv"
expect_err "malformed pod field: file:line and field" 1 "bad1.csv:4: field memory_mib: \"lots\" is not an integer" \
    "$SIM" openb --nodes "$NODES" --pods "$WORK/bad1.csv"
{ head -n 3 "$PODS"; echo "openb-pod-x,12000,100"; } >"$WORK/bad2.csv"
expect_err "short pod line: file:line and field count" 1 "bad2.csv:4: 3 fields, the header has 11" \
    "$SIM" openb --nodes "$NODES" --pods "$WORK/bad2.csv"
{ head -n 3 "$PODS"; echo "openb-pod-x,12000,100,2,500,,LS,Running,0,1,0"; } >"$WORK/bad3.csv"
expect_err "shared GPU on a multi-GPU pod refused" 1 "bad3.csv:4: field gpu_milli: 500 on a pod with num_gpu 2" \
    "$SIM" openb --nodes "$NODES" --pods "$WORK/bad3.csv"
{ head -n 2 "$NODES"; echo "openb-node-x,64000,262144,99,P100"; } >"$WORK/bad4.csv"
expect_err "node with too many GPUs: file:line and field" 1 "bad4.csv:3: field gpu: 99 is out of range (0 to 64)" \
    "$SIM" openb --nodes "$WORK/bad4.csv" --pods "$PODS"
{ head -n 3 "$NODES"; sed -n 2p "$NODES"; } >"$WORK/bad7.csv"
expect_err "duplicate node name: both lines" 1 'bad7.csv:4: field sn: node "openb-node-0000" already on line 2' \
    "$SIM" openb --nodes "$WORK/bad7.csv" --pods "$PODS"
expect_err "pods file without the needed columns" 1 'no column "cpu_milli" in the header' \
    "$SIM" openb --nodes "$NODES" --pods "$TRACES/philly.csv"
printf 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-09 00:00:00,100,8,800,a\n' >"$WORK/bad5.csv"
expect_err "philly bad timestamp: file:line and field" 1 'bad5.csv:2: field timestamp: "2017-13-09 00:00:00" is not a valid date and time' \
    "$SIM" philly --jobs "$WORK/bad5.csv" --gpus-per-node 8 --nodes 2
printf 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 00:00:00,10,zero,0,a\n' >"$WORK/bad6.csv"
expect_err "philly bad GPU count: file:line and field" 1 'bad6.csv:2: field num_gpus: "zero" is not an integer' \
    "$SIM" philly --jobs "$WORK/bad6.csv" --gpus-per-node 8 --nodes 2
expect_err "philly unknown queue: exit 2" 2 'option --queue: unknown queueing "lifo" (known: fifo, backfill, easy)' \
    "$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --queue lifo
expect_err "philly --limit-factor below 1" 2 "option --limit-factor: 0.5 is out of range (1 to 1000)" \
    "$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --queue easy --limit-factor 0.5
expect_err "philly missing --nodes: exit 2" 2 "--nodes M is required" \
    "$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8
expect_err "philly --gpus-per-node out of range" 2 "option --gpus-per-node: 65 is out of range (1 to 64)" \
    "$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 65 --nodes 2


# --- philly --half-life: the queue's usage decayed over time (R-O6) ---
# One job of 4 GPUs for a day: its end is the last event, decayed before
# the release with the usage of the day: D = (1 - 2^(-1 day / h)) x 4.
cat >"$WORK/one.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 00:00:00,86400,4,345600,a
EOF
frun() { "$SIM" philly --jobs "$1" --gpus-per-node 8 --nodes 1 "${@:2}" 2>/dev/null; }
frun "$WORK/one.csv" --half-life 86400 >"$WORK/h1"
check "half-life 1 day, a day at gpu=4: average 2 (half)" test "$(val decayed_gpus "$WORK/h1")" = 2.000
check "the summary names the half-life" test "$(val fair_share_half_life_s "$WORK/h1")" = 86400
frun "$WORK/one.csv" --half-life 172800 >"$WORK/h2"
check "half-life 2 days: (1 - 2^(-1/2)) x 4 = 1.172" test "$(val decayed_gpus "$WORK/h2")" = 1.172
frun "$WORK/one.csv" --half-life 0 >"$WORK/h0"
check "half-life 0: the usage itself, 4" test "$(val decayed_gpus "$WORK/h0")" = 4.000

# Usage 4, then 6 from 12 h, then 2 from 24 h to 36 h, half-life 1 day:
# each event decays over the half day since the last with the usage it had.
cat >"$WORK/two.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 00:00:00,86400,4,345600,a
2017-10-09 12:00:00,86400,2,172800,a
EOF
frun "$WORK/two.csv" --half-life 86400 >"$WORK/t1"
check "piecewise usage 4, 6, 2 over half days: 2.414" test "$(val decayed_gpus "$WORK/t1")" = 2.414

# without the option the summary is as before
frun "$WORK/two.csv" >"$WORK/t0"
check "without --half-life no fair-share lines" test -z "$(val decayed_gpus "$WORK/t0")"
check "and the same waits and utilisation" \
    test "$(grep -v '^fair_share\|^decayed' "$WORK/t1")" = "$(cat "$WORK/t0")"
expect_err "philly negative --half-life: exit 2" 2 "option --half-life" \
    "$SIM" philly --jobs "$WORK/one.csv" --gpus-per-node 8 --nodes 1 --half-life -1

echo "1..$N"
[ "$FAILS" -eq 0 ]
