#!/usr/bin/env bash
# tide-sim philly --queues and --fair end to end: hand-computed fairness on
# tiny traces, a two-level tree on a slice of the real Philly trace (the
# same output twice, the books adding up), and the queue file's errors.
# Prints TAP; needs no database.  Program and traces are found as in
# sim.sh.
set -uo pipefail

. "$(dirname "$0")/sim_lib.bash" philly.csv

# --- two queues of quota 1 on one node of 2 GPUs, each getting its quota ---
# t=0: a1, b1 start (1 GPU, one day); a2, b2 wait the whole day 0 and run
# half a day from t=86400.  Day 0: each received 86400 GPU-s = its quota's
# share of 2 x 86400, so x = 1 for both and J = 1, capped or not.
printf 'name,parent,quota_gpus\na,,1\nb,,1\n' >"$WORK/q2.csv"
cat >"$WORK/even.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
0,86400,1,86400,a
0,86400,1,86400,b
0,43200,1,43200,a
0,43200,1,43200,b
EOF
"$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/q2.csv" \
    --fair "$WORK/even.fair" >"$WORK/even.out" 2>"$WORK/even.err"; st=$?
check "even: exits 0" test $st -eq 0
check "even: 2 days, J_d = 1 every day (mean and p10), capped and uncapped" \
    test "$(val fair_days "$WORK/even.out") $(val jain_mean "$WORK/even.out") $(val jain_p10 "$WORK/even.out") $(val jain_uncapped_mean "$WORK/even.out")" = "2 1.0000 1.0000 1.0000"
check "even: fair CSV header" \
    test "$(head -n 1 "$WORK/even.fair")" = "day,queue,parent,quota_gpus,received_gpu_s,waiting_gpu_s,jain,jain_uncapped"
check "even: day 0, a received 86400 GPU-s and waited 86400" \
    grep -qx '0,a,,1,86400,86400,1.0000,1.0000' "$WORK/even.fair"
check "even: day 1, b received 43200 GPU-s and waited none" \
    grep -qx '1,b,,1,43200,0,1.0000,1.0000' "$WORK/even.fair"
check "even: each queue's mean wait 43200 s, p99 86400 s" \
    test "$(grep -c '^queue\.[ab]: jobs 2, mean_wait_s 43200.0, p99_wait_s 86400.0$' "$WORK/even.out")" = 2

# --- one queue holds the cluster while the other waits ---
# t=0: a's 2-GPU job starts (borrowing: nothing else asks) for a day; t=1:
# b's 1-GPU job waits until t=86400, then runs an hour.  Day 0: x_a = 1
# (entitled to 86400, received 172800), x_b = 0 (received nothing of its
# 86399 waited), J_0 = 1/2; uncapped x = 2 and 0, J_0 = 4/8 = 1/2.  Day 1
# (3600 s): only b, x_b = 1, J_1 = 1.  Mean 0.75, p10 0.5.
cat >"$WORK/hog.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
0,86400,2,172800,a
1,3600,1,3600,b
EOF
"$SIM" philly --jobs "$WORK/hog.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/q2.csv" \
    --fair "$WORK/hog.fair" >"$WORK/hog.out" 2>&1
check "hog: J_0 = 0.5 capped and uncapped" \
    test "$(awk -F, '$1 == 0 && $2 == "b" { print $7, $8 }' "$WORK/hog.fair")" = "0.5000 0.5000"
check "hog: day 0, a received 172800, b waited 86399" \
    test "$(awk -F, '$1 == 0 { printf "%s=%s/%s ", $2, $5, $6 }' "$WORK/hog.fair")" = "a=172800/0 b=0/86399 "
check "hog: mean J_d 0.75, p10 0.5" \
    test "$(val jain_mean "$WORK/hog.out") $(val jain_p10 "$WORK/hog.out")" = "0.7500 0.5000"
check "hog: the worst queue is b, p99 wait 86399 s" \
    test "$(val worst_p99_queue "$WORK/hog.out") $(val worst_p99_wait_s "$WORK/hog.out")" = "b 86399.0"

# --- a two-level tree on a slice of the real trace ---
# 8 nodes of 8 GPUs; the slice's clusters as leaves of quota 4, alternately
# under org1 and org2, whose quotas are their children's sums.
head -n 3001 "$TRACES/philly.csv" >"$WORK/slice.csv"
awk -F, 'NR > 1 && $5 != "" { print $5 }' "$WORK/slice.csv" | sort -u |
    awk 'BEGIN { print "name,parent,quota_gpus" }
        { o = NR % 2 + 1; leaf[NR] = $1 "," "org" o ",4"; q[o] += 4 }
        END { print "org1,," q[1]; print "org2,," q[2]; for (i = 1; i <= NR; i++) print leaf[i] }' >"$WORK/tree.csv"
nleaves=$(($(wc -l <"$WORK/tree.csv") - 3))
echo "# $nleaves leaves under 2 organisations"
run_tree() {  # half-life, tag
    "$SIM" philly --jobs "$WORK/slice.csv" --gpus-per-node 8 --nodes 8 --policy pack \
        --queues "$WORK/tree.csv" --half-life "$1" --fair "$WORK/$2.fair" >"$WORK/$2.out" 2>"$WORK/$2.err"
}
run_tree 86400 t1; st=$?
check "tree: exits 0" test $st -eq 0
check "tree: at least 3 leaves in the slice" test "$nleaves" -ge 3
run_tree 86400 t2
check "tree: same input, same summary" cmp -s "$WORK/t1.out" "$WORK/t2.out"
check "tree: same input, same fair file" cmp -s "$WORK/t1.fair" "$WORK/t2.fair"
check "tree: summary has the organisations' index" grep -q '^jain_top_mean: ' "$WORK/t1.out"
check "tree: one row per day and queue" \
    test "$(($(wc -l <"$WORK/t1.fair") - 1))" -eq "$(($(val fair_days "$WORK/t1.out") * (nleaves + 2)))"
check "tree: per day, the leaves received at most the cluster's 64 x 86400 GPU-s" \
    awk -F, 'NR > 1 && $2 !~ /^org/ { r[$1] += $5 } END { for (d in r) if (r[d] > 64 * 86400 + 1) exit 1 }' "$WORK/t1.fair"
check "tree: per day, an organisation's figures are its children's sums" \
    awk -F, 'NR > 1 && $3 != "" { r[$1 "," $3] += $5; w[$1 "," $3] += $6 }
        NR > 1 && $3 == "" { R[$1 "," $2] = $5; W[$1 "," $2] = $6 }
        END { for (k in R) if (R[k] - r[k] > 1 || r[k] - R[k] > 1 || W[k] - w[k] > 1 || w[k] - W[k] > 1) exit 1 }' "$WORK/t1.fair"
check "tree: every J_d in (0, 1]" \
    awk -F, 'NR > 1 && ($7 <= 0 || $7 > 1) { exit 1 }' "$WORK/t1.fair"
check "tree: the leaves' completed jobs add up to completed" \
    test "$(awk '/^queue\./ { n += $3 } END { print n + 0 }' "$WORK/t1.out")" = "$(val completed "$WORK/t1.out")"
run_tree 0 t0
check "tree: half-life 0 runs too, every job accounted" \
    test "$(($(val completed "$WORK/t0.out") + $(val unschedulable "$WORK/t0.out")))" = 3000

# --- errors ---
expect_err() {  # name, exit code, message fragment, command...
    local name=$1 code=$2 msg=$3; shift 3
    "$@" >"$WORK/e.out" 2>"$WORK/e.err"; local st=$?
    if [ $st -eq "$code" ] && grep -qF -- "$msg" "$WORK/e.err"; then ok "$name"
    else notok "$name" "exit $st, stderr: $(head -c 300 "$WORK/e.err")"; fi
}
printf 'name,parent,quota_gpus\no,,4\na,o,3\nb,o,3\n' >"$WORK/over.csv"
expect_err "children's quotas over the parent's: exit 1, file:line" 1 \
    'over.csv:2: the children of queue "o" have 6 GPUs of quota, more than its 4' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/over.csv"
printf 'name,parent,quota_gpus\na,zz,1\nb,,1\n' >"$WORK/orphan.csv"
expect_err "unknown parent: exit 1" 1 'orphan.csv:2: parent "zz" of queue "a" is not a queue of the file' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/orphan.csv"
printf 'name,parent,quota_gpus\na,b,1\nb,a,1\n' >"$WORK/cycle.csv"
expect_err "a cycle of parents: exit 1" 1 'is its own ancestor' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/cycle.csv"
printf 'name,parent,quota_gpus\na,,1\n' >"$WORK/one.csv"
expect_err "a job's cluster names no queue: exit 1, file:line" 1 'even.csv:3: field cluster: "b" is not a queue of' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/one.csv"
printf 'name,parent,quota_gpus\na,,2\nb,a,1\n' >"$WORK/inner.csv"
expect_err "a job in an inner queue: exit 1" 1 '"a" is not a leaf queue' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --queues "$WORK/inner.csv"
expect_err "--fair without --queues: exit 2" 2 '--fair FILE needs --queues FILE' \
    "$SIM" philly --jobs "$WORK/even.csv" --gpus-per-node 2 --nodes 1 --fair "$WORK/x.csv"

echo "1..$N"
[ "$FAILS" -eq 0 ]
