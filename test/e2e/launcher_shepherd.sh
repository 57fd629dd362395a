#!/usr/bin/env bash
# The launcher's shepherd (one small process per launcher, docs/launcher.md):
# it starts every command in its own process group, records each exit code
# in the state directory (the second line of ALLOC.pid) even while no
# launcher runs, leaves once its last command has ended, and when it dies
# the launcher still gets the exit codes of its commands (it is their
# subreaper) and starts a new shepherd.  Exit records in ALLOC.exit (what
# launchers before the one-shepherd design wrote) are still read.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 8
start_launcher n1 --grace-period 1
L1=$LAST_LAUNCHER
STATE=$WORK/state-n1

# the shepherd named in the launcher's log
shepherd_of() {
    local pid=""
    for _ in $(seq 50); do
        pid=$(grep -Eo 'event=shepherd pid=[0-9]+' "$WORK/launcher-n1.log" | sed -n "${1}p" | grep -Eo '[0-9]+$')
        [ -n "$pid" ] && break
        sleep 0.1
    done
    printf '%s' "$pid"
}
# field N of /proc/PID/stat after the command name
stat_field() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$(($2 - 2))"; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.1; done; }
cmd() { echo "echo \$\$ > $WORK/$1.pid; while [ ! -e $WORK/$1.go ]; do sleep 0.05; done; exit $2"; }

S1=$(shepherd_of 1)
like "$S1" '^[0-9]+$' "the launcher logs its shepherd's pid"
is "$(cat "/proc/$S1/comm" 2>/dev/null)" tide-shepherd "the shepherd is named tide-shepherd"
is "$(stat_field "$S1" 5)" "$S1" "it leads its own process group (a signal to the launcher's group spares it)"

ja=$(submit 'gpu=1' "$(cmd a 4)")
place "$ja" n1 0
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $ja" running)" running "a job runs"
wait_file "$WORK/a.pid"
apid=$(cat "$WORK/a.pid")
is "$(stat_field "$apid" 4)" "$S1" "its command is the shepherd's child"
is "$(stat_field "$apid" 5)" "$apid" "and leads its own process group"
aid=$(q "SELECT id FROM tide.allocations WHERE job_id = $ja")
is "$(cut -d' ' -f1 "$STATE/$aid.pid" 2>/dev/null)" "$apid" "the state directory records the command's pid"

# the shepherd dies while the launcher runs: the exit code is not lost
kill -KILL "$S1"
for _ in $(seq 50); do alive "$S1" || break; sleep 0.1; done
touch "$WORK/a.go"
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $ja) FROM tide.jobs WHERE id = $ja" "failed 4")" "failed 4" \
    "a command whose shepherd was killed still has its exit code (4) reported"
like "$(cat "$WORK/launcher-n1.log")" "event=error shepherd pid=$S1 was killed by signal 9" "the launcher says its shepherd died"
jb=$(submit 'gpu=1' 'exit 0')
place "$jb" n1 1
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" succeeded)" succeeded "new work starts under a new shepherd"
S2=$(shepherd_of 2)
like "$S2" '^[0-9]+$' "which the launcher logs"

# the launcher dies: its shepherd stays, records the exit, then leaves
jc=$(submit 'gpu=1' "$(cmd c 6)")
place "$jc" n1 2
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jc" running)" running "another job runs"
wait_file "$WORK/c.pid"
cid=$(q "SELECT id FROM tide.allocations WHERE job_id = $jc")
kill -KILL "$L1"
wait "$L1" 2>/dev/null
LAUNCHER_PIDS=()
alive "$S2"
is "$?" 0 "the shepherd outlives its launcher"
touch "$WORK/c.go"
for _ in $(seq 100); do [ -n "$(sed -n 2p "$STATE/$cid.pid" 2>/dev/null)" ] && break; sleep 0.1; done
is "$(sed -n 2p "$STATE/$cid.pid" 2>/dev/null | cut -d' ' -f1)" 6 "it records the exit code (6) while no launcher runs (2nd line of ALLOC.pid)"
like "$(sed -n 2p "$STATE/$cid.pid" 2>/dev/null)" '^6 [0-9]+\.[0-9]{6}$' "and when it ended (the boot's monotonic clock)"
for _ in $(seq 100); do alive "$S2" || break; sleep 0.1; done
alive "$S2"
is "$?" 1 "and leaves once its last command has ended"
start_launcher n1 --grace-period 1
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $jc) FROM tide.jobs WHERE id = $jc" "failed 6")" "failed 6" \
    "the next launcher reports it"

# an ALLOC.exit file, as earlier launchers wrote, is still an exit record
L3=$LAST_LAUNCHER
S3=$(shepherd_of 3)
je=$(submit 'gpu=1' "$(cmd e 0)")
place "$je" n1 4
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $je" running)" running "one more job runs"
wait_file "$WORK/e.pid"
eid=$(q "SELECT id FROM tide.allocations WHERE job_id = $je")
kill -KILL "$L3"
wait "$L3" 2>/dev/null
LAUNCHER_PIDS=()
kill -KILL "$S3"
kill -KILL -- "-$(cat "$WORK/e.pid")"
for _ in $(seq 50); do alive "$(cat "$WORK/e.pid")" || break; sleep 0.1; done
printf '9\n' > "$STATE/$eid.exit"
start_launcher n1 --grace-period 1
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $je) FROM tide.jobs WHERE id = $je" "failed 9")" "failed 9" \
    "an exit code in ALLOC.exit (older launchers) is reported"
for _ in $(seq 50); do [ -e "$STATE/$eid.exit" ] || break; sleep 0.1; done
[ -e "$STATE/$eid.exit" ] || [ -e "$STATE/$eid.pid" ]
is "$?" 1 "and both its state files are removed"

# --no-shepherd: no shepherd process
stop_launchers
start_launcher n1 --no-shepherd
jd=$(submit 'gpu=1' "$(cmd d 0)")
place "$jd" n1 3
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jd" running)" running "--no-shepherd: a job runs"
wait_file "$WORK/d.pid"
is "$(stat_field "$(cat "$WORK/d.pid")" 4)" "$LAST_LAUNCHER" "--no-shepherd: its command is the launcher's child"
touch "$WORK/d.go"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jd" succeeded)" succeeded "--no-shepherd: and succeeds"

is "$(q "SELECT count(*) FROM tide.allocations WHERE state <> 'released'")" 0 "every allocation is released"
finish
