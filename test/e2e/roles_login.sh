#!/usr/bin/env bash
# Real logins, not SET ROLE: a submitter and a launcher connect as
# themselves (the pgTAP files switch roles inside a superuser session, so
# SESSION_USER is always a superuser there).  The launcher runs its node
# under row-level security; a submitter cannot make the row-level security
# helpers answer for another role, so it cannot learn whether other owners'
# jobs exist or were placed.
. "$(dirname "$0")/lib.bash"

fresh_db
SUB=e2e_sub_$$
LAU=e2e_lau_$$
q "CREATE ROLE $SUB LOGIN IN ROLE tide_submitter; CREATE ROLE $LAU LOGIN IN ROLE tide_launcher" >/dev/null
at_exit "stop_launchers; psql -qAtX -d postgres -c 'DROP ROLE IF EXISTS $SUB, $LAU'"
setup_cluster n1 2
q "UPDATE tide.nodes SET launcher_role = '$LAU' WHERE name = 'n1'" >/dev/null

as() {
    local who=$1
    shift
    psql -qAtX -U "$who" -d "$DB" -c "$1" 2>&1
}

# another owner's job, placed
other=$(submit 'gpu=1' '')
place "$other" n1 0
is "$(q "SELECT state FROM tide.jobs WHERE id = $other")" allocated "another owner's job is placed"

is "$(as "$SUB" "SELECT session_user = current_user")" t "the submitter is logged in as itself"
is "$(as "$SUB" "SELECT count(*) FROM tide.jobs")" 0 "it sees none of the other owner's jobs"
is "$(as "$SUB" "SELECT tide._launches_job($other, 'tide_admin')")" f \
    "asked for another role, _launches_job does not tell whether that job has allocations"
is "$(as "$SUB" "SELECT tide._launches_job($other, '$LAU')")" f "nor for the node's launcher role"
is "$(as "$SUB" "SELECT tide._may_launch('n1', '$LAU')")" f "_may_launch answers only for roles the session may act as"
is "$(as "$LAU" "SELECT tide._may_launch('n1', current_user)")" t "the launcher's own login may launch on its node"
is "$(as "$LAU" "SELECT count(*) FROM tide.jobs WHERE id = $other")" 1 "and reads the job it launches"

# the reference launcher, connected as the node's launcher role
mine=$(as "$SUB" "SELECT tide.submit('e2e', 'gpu=1', command => 'echo \$CUDA_VISIBLE_DEVICES > $WORK/mine.out')")
like "$mine" '^[0-9]+$' "the submitter submits a job as itself"
q "SELECT tide.cancel($other)" >/dev/null
start_launcher n1 --dsn "dbname=$DB user=$LAU"
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $other" cancelled 30)" cancelled \
    "the launcher, logged in as its role, confirms an eviction"
place "$mine" n1 0
is "$(wait_for "SELECT state FROM tide.jobs WHERE id = $mine" succeeded 30)" succeeded \
    "and runs the submitter's job to the end"
is "$(cat "$WORK/mine.out" 2>/dev/null)" "$(q "SELECT tide.cuda_visible_devices(gpus) FROM tide.allocations WHERE job_id = $mine")" \
    "with the GPUs of its allocation"
is "$(as "$SUB" "SELECT state FROM tide.jobs WHERE id = $mine")" succeeded "the submitter sees its job succeeded"
finish
