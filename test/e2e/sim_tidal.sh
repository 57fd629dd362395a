#!/usr/bin/env bash
# tide-sim with the engine's forecast and evictions, end to end: philly
# --forecast on a hand-computed trace (exact at 1x, late by what the
# limits over-ask at 2x), and tidal: a service evicting training, chosen
# by least harm and by the old order (--legacy-order), hand-computed,
# then a slice of the real trace (its books, the same output twice).
# Prints TAP; needs no database.  Program and traces are found as in
# sim.sh.
set -uo pipefail

. "$(dirname "$0")/sim_lib.bash" philly.csv

# --- philly --forecast: 2 nodes of 8 GPUs (the trace of sim.sh) ---
cat >"$WORK/jobs.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 00:00:00,100,8,800,a
2017-10-09 00:00:10,50,4,200,a
2017-10-09 00:00:20,10,8,80,a
2017-10-09 00:00:30,10,2,20,a
2017-10-09 00:00:30,10,32,20,b
2017-10-09 00:00:40,10,16,20,a
EOF
# Real starts: J1 0, J2 10, J3 60 (J2 ends), J4 30, J6 100 (J1 ends).  At
# 1x the running jobs end when their limits say: every forecast is exact.
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --forecast \
    --forecasts "$WORK/f1.csv" >"$WORK/f1" 2>/dev/null; st=$?
check "philly --forecast exits 0" test $st -eq 0
check "forecast at each arrival of the 5 jobs that can run" test "$(val forecast_asked "$WORK/f1")" = 5
check "1x: every forecast exact (p90 of |error| 0)" \
    test "$(val forecast_jobs "$WORK/f1")/$(val forecast_abs_p90_s "$WORK/f1")" = 5/0
check "1x: the two that waited, forecast to the second (J3 at 60, J6 at 100)" \
    test "$(val forecast_waited_jobs "$WORK/f1")/$(awk -F, '$1 == 4 || $1 == 7 { printf "%s-%s ", $4, $5 }' "$WORK/f1.csv")" = "2/60-60 100-100 "
check "the replay's own waits, unchanged by --forecast (mean 20 s)" test "$(val mean_wait_s "$WORK/f1")" = 20.0
# At 2x the forecast ends J2 at 110 and J1 at 200: J3 is forecast at 110
# (+50), J6 at 200 (+100); J1, J2, J4 start at once (0).
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --forecast --limit-factor 2 >"$WORK/f2" 2>/dev/null
check "2x: |error| median 0, p90 100 s; late 40%" \
    test "$(val forecast_abs_median_s "$WORK/f2")/$(val forecast_abs_p90_s "$WORK/f2")/$(val forecast_late_pct "$WORK/f2")" = 0/100/40.0
check "2x: of the jobs that waited, |error| median 50 s, p90 100 s, median signed +50" \
    test "$(val forecast_waited_abs_median_s "$WORK/f2")/$(val forecast_waited_abs_p90_s "$WORK/f2")/$(val forecast_waited_signed_median_s "$WORK/f2")" = 50/100/50
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --forecast --forecast-from 0.0003 --forecast-days 0.0001 >"$WORK/f3" 2>/dev/null
check "a window of days: only its arrivals (26 s to 34.6 s: J4)" test "$(val forecast_asked "$WORK/f3")" = 1
"$SIM" philly --jobs "$WORK/jobs.csv" --gpus-per-node 8 --nodes 2 --forecast --queue easy >/dev/null 2>"$WORK/f4.err"; st=$?
check "--forecast with --queue easy: exit 2, said why" \
    test $st -eq 2 -a "$(cat "$WORK/f4.err")" = "tide-sim: philly: --forecast needs --queue backfill"

# --- tidal: one node of 8 GPUs, a 2-GPU service at t=50 ---
cat >"$WORK/train.csv" <<'EOF'
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 00:00:00,100,2,200,a
2017-10-09 00:00:10,100,2,200,a
2017-10-09 00:00:20,100,4,400,a
EOF
printf 'arrival_s,duration,num_gpus\n50,30,2\n' >"$WORK/svc.csv"
# At t=50 the node is full.  Least harm: J2 (2 GPUs x 40 s = 80 GPU-s)
# rather than J1 (100) or J3 (4 x 30 = 120); the old order: J3, placed
# last, 4 GPUs for 2.  The service runs 50 to 80 (60 GPU-s reclaimed); the
# victim is requeued and starts again at 80.
tidal() { "$SIM" tidal --jobs "$WORK/train.csv" --services "$WORK/svc.csv" --gpus-per-node 8 \
    --nodes 1 --from-day 0 --days 1 --restart-cost 0 "$@" 2>&1; }
tidal >"$WORK/t1"; st=$?
check "tidal exits 0" test $st -eq 0
check "least harm: one eviction of 2 GPUs, for the 2-GPU service" \
    test "$(val evictions "$WORK/t1")/$(val evicted_gpus "$WORK/t1")/$(val held_for_gpus "$WORK/t1")" = 1/2/2
check "least harm: 80 GPU-s thrown away per 60 reclaimed" test "$(val thrown_per_reclaimed "$WORK/t1")" = 1.3333
check "least harm: J2 requeued, waits 70 s (mean 23.3 s), the service none" \
    test "$(val training_mean_wait_s "$WORK/t1")/$(val inference_p90_wait_s "$WORK/t1")" = 23.3/0.0
tidal --evictions "$WORK/ev.csv" >/dev/null
check "--evictions: J2 (2 GPUs, 40 s old) for the service (job 4, 2 GPUs) at 50 s" \
    test "$(tail -n +2 "$WORK/ev.csv")" = "50,2,2,40,4,2"
tidal --legacy-order >"$WORK/t2"
check "old order: the 4-GPU job placed last goes (120 GPU-s per 60)" \
    test "$(val order "$WORK/t2")/$(val evicted_gpus "$WORK/t2")/$(val thrown_per_reclaimed "$WORK/t2")" = legacy/4/2.0000
check "old order: J3 starts again at 80 (waits 60 s, mean 20 s)" test "$(val training_mean_wait_s "$WORK/t2")" = 20.0
# with the 5-minute restart floor J1 and J2 cost the same (600 GPU-s): the
# most recently placed of them, J2, still goes
tidal --restart-cost 300 >"$WORK/t3"
check "restart floor 300 s: still J2" test "$(val training_mean_wait_s "$WORK/t3")" = 23.3
# min_runtime 45 s on the training queue: J2 (40 s) and J3 (30 s) are
# protected, J1 (2 GPUs x 50 s) goes
tidal --min-runtime 45 >"$WORK/t4"
check "min_runtime 45 s: J1 goes, 100 GPU-s per 60" test "$(val thrown_per_reclaimed "$WORK/t4")" = 1.6667

# --- tidal on a slice of the real trace ---
slice() { "$SIM" tidal --jobs "$TRACES/philly.csv" --gpus-per-node 8 --nodes 16 --from-day 20 --days 0.5 "$@" 2>&1; }
slice >"$WORK/s1"; st=$?
check "tidal on half a day of the trace exits 0 (every job ran to its end)" test $st -eq 0
check "services evicted training" awk '/^evictions: / { exit !($2 > 0) }' "$WORK/s1"
check "GPUs evicted and GPU-time thrown away counted" \
    awk -F': ' '{ v[$1] = $2 } END { exit !(v["evicted_gpus"] + 0 > 0 && v["thrown_away_gpu_h"] + 0 > 0) }' "$WORK/s1"
slice >"$WORK/s2"
check "same input and seed, same summary" cmp -s "$WORK/s1" "$WORK/s2"
slice --seed 2 >"$WORK/s3"
check "another seed, other services" test "$(val inference_jobs "$WORK/s1")" != "$(val inference_jobs "$WORK/s3")"
"$SIM" tidal --jobs "$TRACES/philly.csv" --gpus-per-node 4 --nodes 2 >/dev/null 2>"$WORK/e1"; st=$?
check "tidal --gpus-per-node below 8: exit 2" test $st -eq 2
printf 'arrival_s,duration,num_gpus\n5,30,9\n' >"$WORK/bad.csv"
tidal --services "$WORK/bad.csv" >"$WORK/e2"; st=$?
check "a service of 9 GPUs on 8-GPU nodes: exit 1, file:line" \
    test $st -eq 1 -a -n "$(grep 'bad.csv:2: field num_gpus' "$WORK/e2")"

echo "1..$N"
[ "$FAILS" -eq 0 ]
