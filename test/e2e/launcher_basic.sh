#!/usr/bin/env bash
# tide-launcher end to end: a job's command sees its allocation's GPU mask
# and ids, a failing command fails the job with its exit code, a job
# without a command fails with 127, and bad invocations get clear errors.
. "$(dirname "$0")/lib.bash"

fresh_db

# ---- bad invocations ----
out=$("$LAUNCHER" --help 2>&1); st=$?
is "$st" 0 "--help exits 0"
like "$out" "--node NAME" "--help names --node"
out=$("$LAUNCHER" 2>&1); st=$?
is "$st" 2 "no --node: exit 2"
like "$out" "--node NAME is required" "no --node: says what is missing"
out=$("$LAUNCHER" --node n1 --grace-period soon 2>&1); st=$?
is "$st" 2 "bad --grace-period: exit 2"
like "$out" 'invalid value for --grace-period: "soon"' "bad --grace-period: names the option and value"
out=$("$LAUNCHER" --node n1 --frobnicate 2>&1); st=$?
is "$st" 2 "unknown option: exit 2"
out=$("$LAUNCHER" --node n1 --output-dir "$WORK/no-such-dir" 2>&1); st=$?
is "$st" 2 "missing --output-dir: exit 2 at start"
like "$out" "--output-dir \"$WORK/no-such-dir\": No such file or directory" "missing --output-dir: says so"
touch "$WORK/a-file"
out=$("$LAUNCHER" --node n1 --output-dir "$WORK/a-file" 2>&1); st=$?
is "$st" 2 "--output-dir that is a file: exit 2"
like "$out" "is not a directory" "--output-dir that is a file: says so"
out=$(timeout 20 "$LAUNCHER" --node nosuchnode --dsn "dbname=$DB" --state-dir "$WORK/state-x" 2>&1); st=$?
is "$st" 1 "unknown node: exit 1"
like "$out" 'unknown node "nosuchnode"' "unknown node: says so"
out=$(timeout 20 "$LAUNCHER" --node n1 --dsn "dbname=$DB user=no_such_role_e2e" --state-dir "$WORK/state-y" 2>&1); st=$?
is "$st" 1 "refused credentials: exit 1"
like "$out" 'cannot connect.*no_such_role_e2e' "refused credentials: says why"

# ---- real work ----
setup_cluster n1 4
start_launcher n1
out_file=$WORK/cvd.txt
j1=$(submit 'gpu=2' "printf '%s' \"\$CUDA_VISIBLE_DEVICES\" > $out_file; printf '%s %s %s' \"\$TIDE_JOB_ID\" \"\$TIDE_ALLOCATION_ID\" \"\$TIDE_REPLICA\" > $out_file.ids")
place "$j1" n1 '1-2'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j1" succeeded)" succeeded \
    "a command that writes CUDA_VISIBLE_DEVICES succeeds"
mask=$(q "SELECT tide.cuda_visible_devices(gpus) FROM tide.allocations WHERE job_id = $j1")
is "$(cat "$out_file" 2>/dev/null)" "$mask" "the file holds the allocation's GPU mask ($mask)"
is "$(printf '%s' "$mask" | tr ',' '\n' | grep -c .)" 2 "two GPUs for a gpu=2 request"
alloc=$(q "SELECT id FROM tide.allocations WHERE job_id = $j1")
is "$(cat "$out_file.ids" 2>/dev/null)" "$j1 $alloc 0" "TIDE_JOB_ID, TIDE_ALLOCATION_ID, TIDE_REPLICA"
is "$(q "SELECT state || ' ' || exit_code FROM tide.allocations WHERE job_id = $j1")" "released 0" \
    "the allocation is released with exit code 0"

j2=$(submit 'gpu=1' 'echo failing >&2; exit 7')
place "$j2" n1 '0'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j2" failed)" failed "a command exiting 7 fails the job"
is "$(q "SELECT exit_code FROM tide.allocations WHERE job_id = $j2")" 7 "its exit code 7 is recorded"

j3=$(submit 'gpu=1' 'kill -USR1 $$')
place "$j3" n1 '3'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j3" failed)" failed "a command killed by a signal fails the job"
is "$(q "SELECT exit_code FROM tide.allocations WHERE job_id = $j3")" 138 "signal 10 is reported as 128+10"
setup_cluster c1 0
start_launcher c1
j5=$(submit 'cpu=1' 'printf "[%s]" "$CUDA_VISIBLE_DEVICES" > '"$WORK/nogpu.txt")
place "$j5" c1 ''
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j5" succeeded)" succeeded "a job without GPUs succeeds"
is "$(cat "$WORK/nogpu.txt" 2>/dev/null)" "[]" "CUDA_VISIBLE_DEVICES is empty without GPUs"

j4=$(submit 'gpu=1' '')
place "$j4" n1 '0'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j4" failed)" failed "a job without a command fails"
is "$(q "SELECT exit_code FROM tide.allocations WHERE job_id = $j4")" 127 "with exit code 127"
like "$(cat "$WORK/launcher-n1.log")" "event=no_command alloc=[0-9]+ job=$j4" "and the launcher says why"

# --no-shepherd: the same contract, commands started straight from the launcher
q "SELECT tide.register_node('d1', 'cpu=8, memory=16Gi, gpu=2', labels => '{\"spawn\": \"direct\"}')" >/dev/null
start_launcher d1 --no-shepherd
j6=$(q "SELECT tide.submit('e2e', 'gpu=2', node_selector => '{\"spawn\": \"direct\"}',
                           command => \$c\$printf '%s' \"\$CUDA_VISIBLE_DEVICES\" > $WORK/direct.out; exit 5\$c\$)")
place "$j6" d1 '0-1'
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $j6) FROM tide.jobs WHERE id = $j6" "failed 5")" "failed 5" \
    "--no-shepherd: the exit code is reported"
is "$(cat "$WORK/direct.out" 2>/dev/null)" "0,1" "--no-shepherd: CUDA_VISIBLE_DEVICES is set"

# a launcher that is not a superuser: a member of tide_launcher
lrole=e2e_launcher_$$
orole=e2e_outsider_$$
q "CREATE ROLE $lrole LOGIN IN ROLE tide_launcher; CREATE ROLE $orole LOGIN" >/dev/null
at_exit "psql -qX -d postgres -c 'DROP ROLE IF EXISTS $lrole, $orole'"
out=$(timeout 20 "$LAUNCHER" --node n1 --dsn "dbname=$DB user=$orole" --state-dir "$WORK/state-z" 2>&1); st=$?
is "$st" 1 "a role that may not act for the node: exit 1"
like "$out" "permission denied for schema tide|may not act for node" "and the server's reason is shown"
q "SELECT tide.register_node('r1', 'cpu=8, memory=16Gi, gpu=1', labels => '{\"spawn\": \"role\"}')" >/dev/null
"$LAUNCHER" --node r1 --dsn "dbname=$DB user=$lrole" --state-dir "$WORK/state-r1" --poll-interval 1 \
    2>>"$WORK/launcher-r1.log" &
LAUNCHER_PIDS+=($!)
j7=$(q "SELECT tide.submit('e2e', 'gpu=1', node_selector => '{\"spawn\": \"role\"}',
                           command => \$c\$printf '%s' \"\$CUDA_VISIBLE_DEVICES\" > $WORK/role.out\$c\$)")
place "$j7" r1 '0'
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j7" succeeded)" succeeded "a tide_launcher member runs its node's work"
is "$(cat "$WORK/role.out" 2>/dev/null)" "0" "and sees its GPU mask"

# the launcher is alive and heartbeating, and says what its heartbeats answer
is "$(q "SELECT heartbeat_at > now() - interval '10 seconds' FROM tide.nodes WHERE name = 'n1'")" t "heartbeats arrive"
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=ready" "the launcher logs its node's state"
q "SELECT tide.drain_node('n1')" >/dev/null
for _ in $(seq 50); do grep -q "event=node_state state=draining (was ready)" "$WORK/launcher-n1.log" && break; sleep 0.2; done
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=draining \(was ready\)" "a drain is logged at the next heartbeat"
q "SELECT tide.resume_node('n1')" >/dev/null
for _ in $(seq 50); do grep -q "event=node_state state=ready (was draining)" "$WORK/launcher-n1.log" && break; sleep 0.2; done
like "$(cat "$WORK/launcher-n1.log")" "event=node_state state=ready \(was draining\)" "and so is the resume"
is "$(grep -c "event=node_state" "$WORK/launcher-n1.log")" 3 "one line per change, none for unchanged heartbeats"
st=0
for p in "${LAUNCHER_PIDS[@]}"; do
    kill -TERM "$p"
    wait "$p" || st=$?
done
is "$st" 0 "SIGTERM stops the launchers with exit 0"
LAUNCHER_PIDS=()
finish
