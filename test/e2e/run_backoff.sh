#!/usr/bin/env bash
# Retry backoff (R-T5) with a real launcher: a command that always fails,
# with max_retries 3, is retried after growing delays (tide.retry_backoff
# 1 s here, doubled per attempt), not every cycle: a crash loop does not
# occupy the node every second.
. "$(dirname "$0")/lib.bash"

fresh_db
q "ALTER DATABASE $DB SET tide.retry_backoff = '1s'" >/dev/null
setup_cluster n1 1
start_launcher n1
j=$(q "SELECT tide.submit('e2e', 'gpu=1', max_retries => 3, command => \$c\$date +%s.%N >> $WORK/runs; exit 7\$c\$)")
# cycles every 0.1 s until the last attempt failed (or 30 s)
for _ in $(seq 300); do
    q "SELECT tide.run_cycle()" >/dev/null
    [ "$(q "SELECT count(*) FROM tide.jobs WHERE state = 'failed' AND (id = $j OR retry_of IS NOT NULL)")" = 4 ] && break
    sleep 0.1
done
is "$(q "SELECT count(*) FROM tide.jobs WHERE state = 'failed'")" 4 "four attempts ran and failed"
is "$(wc -l < "$WORK/runs" | tr -d ' ')" 4 "the command ran four times"
gaps=$(awk 'NR > 1 { printf "%s%.1f", (NR > 2 ? " " : ""), $1 - prev } { prev = $1 }' "$WORK/runs")
read -r g1 g2 g3 <<<"$gaps"
ok "$(awk -v a="$g1" -v b="$g2" -v c="$g3" 'BEGIN { print (a >= 1 && b >= 2 && c >= 4) ? 0 : 1 }')" \
    "the runs are at least 1, 2 and 4 s apart (gaps: $gaps)"
like "$(q "SELECT string_agg(reason, '|' ORDER BY id) FROM tide.job_events WHERE job_id IN (SELECT id FROM tide.jobs WHERE retry_of IS NOT NULL) AND new_state = 'pending'")" \
    "attempt 2: retry of failed job" "each retry is logged"
finish
