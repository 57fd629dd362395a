#!/usr/bin/env bash
# A state directory that refuses writes (a full tmpfs) makes the launcher
# fail closed: what cannot be recorded does not run (exit code 126, said
# in the log), no empty or partial record is left behind, nothing more is
# started while the directory stays full, and work starts again once it
# has room.  (Unrecorded work would lose its exit code, or be started a
# second time by the next launcher.)
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
SD=$WORK/state-n1
mkdir -p "$SD"
if ! mount -t tmpfs -o size=256k,mode=0700 tide-e2e-state "$SD" 2>/dev/null; then
    for i in $(seq 9); do skip "cannot mount a small tmpfs here (needs root)"; done
    finish
fi
at_exit "stop_launchers; umount -l '$SD'"
start_launcher n1 --grace-period 1

j0=$(submit 'gpu=1' "exit 0")
place "$j0" n1 0
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $j0" succeeded)" succeeded "with room, work runs"

# fill the file system: an empty file can still be created, no block written
dd if=/dev/zero of="$SD/fill" bs=4k >/dev/null 2>&1
ja=$(submit 'gpu=1' "touch $WORK/a.ran")
place "$ja" n1 0
is "$(wait_for "SELECT state || ' ' || (SELECT exit_code FROM tide.allocations WHERE job_id = $ja) FROM tide.jobs WHERE id = $ja" "failed 126")" \
    "failed 126" "with the state directory full, the start fails with exit code 126"
[ -e "$WORK/a.ran" ]
is "$?" 1 "and the command did not run"
like "$(cat "$WORK/launcher-n1.log")" "alloc=[0-9]+ not started: cannot record it in .*No space left on device" \
    "the log says why"
like "$(cat "$WORK/launcher-n1.log")" "event=error state directory .* cannot be written .*starting no new work" \
    "and that no new work starts"
is "$(find "$SD" -name '*.pid' | wc -l | tr -d ' ')" 0 "no empty or partial record is left"

# more work waits (still assigned) while the directory is full ...
jb=$(submit 'gpu=1' "touch $WORK/b.ran")
place "$jb" n1 0
sleep 3
is "$(q "SELECT state FROM tide.allocations WHERE job_id = $jb")" assigned \
    "while it stays full, the next allocation is not started (after three polls)"
# ... and starts once there is room again
rm -f "$SD/fill"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $jb" succeeded)" succeeded \
    "once there is room, it starts"
like "$(cat "$WORK/launcher-n1.log")" "event=state_dir .* takes writes again" "and the log says so"
finish
