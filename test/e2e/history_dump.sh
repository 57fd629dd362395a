#!/usr/bin/env bash
# Bounded history survives pg_dump | psql: the dated partitions that
# tide.maintain_history made (ordinary tables, members of no extension)
# come back attached with their rows, beside the default partitions that
# CREATE EXTENSION makes, and maintenance goes on in the restored database.
# Also: only one maintenance runs at a time.
. "$(dirname "$0")/lib.bash"

fresh_db
setup_cluster n1 4
for i in 1 2 3; do submit 'gpu=1' '' >/dev/null; done
q "SELECT tide.run_cycle()" >/dev/null
# events of five days ago wait in the default partition until maintenance
q "SET session_replication_role = replica;
   INSERT INTO tide.job_events (job_id, at, old_state, new_state, reason)
   SELECT 1, now() - interval '5 days' + g * interval '1 minute', 'pending', 'pending', 'old' FROM generate_series(1, 10) g" >/dev/null
# two cancelled jobs, archived at once
for i in 1 2; do q "SELECT tide.cancel($(submit 'gpu=1' ''))" >/dev/null; done
made=$(q "SET tide.archive_after = '0'; SELECT (tide.maintain_history() ->> 'partitions_made')::int > 0")
is "$made" t "maintenance makes dated partitions"
is "$(q "SELECT count(*) FROM tide.jobs_archive")" 2 "and archives the finished jobs"
is "$(q "SELECT count(*) FROM tide.job_events_default")" 0 "and drains the default partition"

state="SELECT (SELECT count(*) FROM tide.job_events) || '/' || (SELECT count(*) FROM tide.cycles) || '/' || (SELECT count(*) FROM tide.jobs)
       || '/' || (SELECT string_agg(partition::text, ',' ORDER BY partition::text) FROM tide.history_partitions)
       || '/' || (SELECT count(*) FROM pg_indexes WHERE schemaname = 'tide')
       || '/' || (SELECT count(*) FROM tide.jobs_all WHERE archived) || '/' || (SELECT count(*) FROM tide.job_waits)"
before=$(q "$state")

DB2=${DB}_restored
createdb "$DB2"
at_exit "dropdb --if-exists $DB2"
pg_dump -d "$DB" >"$WORK/dump.sql" 2>"$WORK/dump.err"
is "$?" 0 "pg_dump succeeds"
is "$(grep -c . "$WORK/dump.err")" 0 "without warnings"
psql -qX -v ON_ERROR_STOP=1 -d "$DB2" -f "$WORK/dump.sql" >"$WORK/restore.log" 2>&1
is "$?" 0 "the dump restores with psql, no error"
after=$(psql -qAtX -d "$DB2" -c "$state")
is "$after" "$before" "events, cycles, jobs, archived jobs, every partition and its indexes come back"
is "$(psql -qAtX -d "$DB2" -c "SELECT count(*) FROM tide.job_events WHERE reason = 'old'")" 10 "the rows of dated partitions too"
is "$(psql -qAtX -d "$DB2" -c "SELECT tide.maintain_history() ->> 'partitions_made'")" 0 "maintenance in the restored database finds its partitions"
is "$(psql -qAtX -d "$DB2" -c "SELECT tide.submit('e2e', 'gpu=1') > 0")" t "and new jobs log their events"

# one maintenance at a time: a session holding the lock makes another a no-op
psql -qAtX -d "$DB" -c "SELECT pg_advisory_xact_lock(tide._history_lock_key()), pg_sleep(3)" >/dev/null &
holder=$!
sleep 1
is "$(q "SELECT coalesce(tide.maintain_history()::text, 'skipped')")" skipped "a second maintenance returns NULL at once"
wait "$holder"
finish
