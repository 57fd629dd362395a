#!/usr/bin/env bash
# A limit with its warning (R-T1 with R-T2 and R-T3), a real launcher: a
# job with a 4 s limit and warn_before 2 s gets SIGUSR1 about 2 s after it
# started, checkpoints (its trap writes a file), keeps running, and is
# stopped at its limit by the database: SIGTERM, which its shell traps and
# ignores, then SIGKILL after its own 1 s grace period (the launcher's is
# 30 s). It ends failed with the time-limit reason and is not retried.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 1
start_launcher n1 --grace-period 30
j=$(q "SELECT tide.submit('e2e', 'gpu=1', time_limit => '4 seconds', warn_before => '2 seconds',
                          grace_period => '1 second', max_retries => 1,
                          command => \$c\$echo \$\$ > $WORK/pid; trap 'date +%s.%N > $WORK/warned' USR1;
                                     trap 'date +%s.%N > $WORK/term' TERM;
                                     while :; do sleep 0.1; done\$c\$)")
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $j" running)" running "the job runs"
started=$(q "SELECT extract(epoch FROM started_at) FROM tide.jobs WHERE id = $j")
is "$(cycle_until "SELECT state FROM tide.jobs WHERE id = $j" failed 30)" failed "it fails at its limit"
is "$(q "SELECT state_reason FROM tide.jobs WHERE id = $j")" "time limit 00:00:04 reached" "with the time-limit reason"
w=$(cat "$WORK/warned" 2>/dev/null || echo 0)
t=$(cat "$WORK/term" 2>/dev/null || echo 0)
ok "$(awk -v w="$w" -v s="$started" 'BEGIN { d = w - s; print (d >= 1.9 && d < 3.2) ? 0 : 1 }')" \
    "the warning came about 2 s after the start (at $(awk -v w="$w" -v s="$started" 'BEGIN { printf "%.1f", w - s }') s)"
ok "$(awk -v w="$w" -v t="$t" 'BEGIN { print (t > w) ? 0 : 1 }')" "then SIGTERM, after the warning"
ended=$(q "SELECT extract(epoch FROM finished_at) FROM tide.jobs WHERE id = $j")
ok "$(awk -v t="$t" -v e="$ended" 'BEGIN { d = e - t; print (d >= 0.9 && d < 10) ? 0 : 1 }')" \
    "the shell that ignored SIGTERM was killed after its own grace period, not the launcher's 30 s ($(awk -v t="$t" -v e="$ended" 'BEGIN { printf "%.1f", e - t }') s)"
alive "$(cat "$WORK/pid")"
is "$?" 1 "its process is gone"
q "SELECT tide.run_cycle()" >/dev/null
is "$(q "SELECT count(*) FROM tide.jobs WHERE retry_of = $j")" 0 "not retried"
finish
