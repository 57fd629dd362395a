#!/usr/bin/env bash
# The incremental load (docs/cadence.md#incremental-loads) decides exactly
# what a full load decides.  One backend runs every cycle, as the cron
# loop does (the rounds are driven from cycle_incremental.py, the random
# changes and the check are cycle_incremental.sql); before each cycle,
# random changes in their own transactions
# (submissions with dependencies, holds and limits, launchers starting and
# ending jobs and acknowledging evictions, cancels, priorities, drains,
# quotas), and tide.dry_run() lists what a full load decides (it never
# uses the kept rows).  The cycle must make exactly those placements,
# evictions, holds, pending reasons and unschedulable marks.  Mixed in: a
# writer whose transaction is still open across a cycle, a cycle of
# another backend (its pruning must make this backend load in full), and
# tide.incremental_load switched off and on.
. "$(dirname "$0")/lib.bash"

fresh_db
psql -qX -v ON_ERROR_STOP=1 -d "$DB" -f "$(dirname "$0")/cycle_incremental.sql" >/dev/null \
    || { echo "Bail out! the test's functions did not load"; exit 1; }
while IFS=$'\t' read -r result what detail; do
    if [ "$result" = ok ]; then
        ok 0 "$what"
    else
        ok 1 "$what"
        echo "#   $detail"
    fi
done < <(/usr/bin/python3 "$(dirname "$0")/cycle_incremental.py" "$DB" "${TIDE_INC_ROUNDS:-60}" 2>&1 \
         || echo "fail	the driver ended with an error")
finish
