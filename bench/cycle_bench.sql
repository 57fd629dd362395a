-- Cycle benchmark: a synthetic cluster, one cycle from empty, its SQL floor,
-- and a steady-state cycle.  Run through bench/cycle_bench.sh, or:
--   psql -v jobs=10000 -v nodes=1000 -f bench/cycle_bench.sql DB
-- Prints one line per measurement (milliseconds).
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;
SELECT pg_backend_pid() AS bpid \gset
\setenv BPID :bpid
\! echo "memory before $(grep VmHWM /proc/$BPID/status | tr -s ' \t' ' ')"
DROP EXTENSION IF EXISTS pg_tide CASCADE;
DROP TABLE IF EXISTS floor_alloc, floor_jobs, floor_jobs_ff, floor_jobs_placed, floor_events;
CREATE EXTENSION pg_tide;
\ir cycle_cluster.psql
-- With -v pipelines=1, dependencies and arrays; with -v running=N, N
-- running jobs with time limits (cycle_extras.psql).
\ir cycle_extras.psql
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

-- The SQL floor (cycle_floor.psql: the cycle's input queries, the
-- allocation rows, the placed jobs and their events) and, for context,
-- rewriting as many job rows (state or reason) in a copy of tide.jobs
-- (same indexes, no triggers).
\ir cycle_floor.psql
CREATE TABLE floor_jobs (LIKE tide.jobs INCLUDING ALL);
INSERT INTO floor_jobs (:jobcols) OVERRIDING SYSTEM VALUE SELECT :jobcols FROM tide.jobs;
VACUUM ANALYZE floor_jobs;
-- the same with room for HOT updates (fillfactor 70: reason-only updates touch no index)
CREATE TABLE floor_jobs_ff (LIKE tide.jobs INCLUDING ALL) WITH (fillfactor = 70);
INSERT INTO floor_jobs_ff (:jobcols) OVERRIDING SYSTEM VALUE SELECT :jobcols FROM tide.jobs;
VACUUM ANALYZE floor_jobs_ff;
CREATE FUNCTION pg_temp.floor_reasons_ms() RETURNS TABLE (update_ms float8, update_hot_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    UPDATE floor_jobs SET pending_reason = 'no ready node has room' WHERE state = 'pending';
    update_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    t0 := clock_timestamp();
    UPDATE floor_jobs_ff SET pending_reason = 'no ready node has room' WHERE state = 'pending';
    update_hot_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    RETURN NEXT;
END $$;

-- Warm the caches the same way for both.
SELECT count(*) FROM tide.jobs \g /dev/null
SELECT count(*) FROM tide.job_tasks \g /dev/null

-- The cycle's limit steps (R-T1, R-T4) alone, in the state the first
-- cycle meets (cycle_bench_limits.psql says how they are measured).
\if :with_running
-- (what the cycle runs: the check, then the steps it says are due)
CREATE FUNCTION pg_temp.limit_steps_ms() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    d record;
BEGIN
    SELECT * INTO d FROM tide._limits_due(clock_timestamp(), interval '10 minutes');
    IF d.limits THEN
        PERFORM tide._stop_at_limits();
    END IF;
    IF d.starts THEN
        PERFORM tide._stop_unstarted(interval '10 minutes', 3);
    END IF;
    RETURN 1000 * extract(epoch FROM clock_timestamp() - t0);
END $$;
SELECT 'first cycle' AS limit_state \gset
\ir cycle_bench_limits.psql
\endif

-- The first cycle and its contract floor, with the backend's CPU time
-- of each.
\ir cycle_first.psql
CREATE TEMP TABLE floor_reasons AS SELECT * FROM pg_temp.floor_reasons_ms();
SELECT format('floor select_ms=%s insert_ms=%s total_ms=%s; placed jobs to allocated + their events: %s ms (floor with them: %s); every pending job''s reason rewritten: %s ms, with fillfactor 70: %s',
              round(select_ms::numeric, 1), round(insert_ms::numeric, 1), round((select_ms + insert_ms)::numeric, 1),
              round(placed_ms::numeric, 1), round((select_ms + insert_ms + placed_ms)::numeric, 1),
              round(update_ms::numeric, 1), round(update_hot_ms::numeric, 1))
  FROM floor_run, floor_reasons;
-- the contract floor: the inputs read, and what a placement must write
SELECT format('cycle / contract floor = %s', round((1000 * extract(epoch FROM c.finished_at - c.started_at)
                                                     / (f.select_ms + f.insert_ms + f.placed_ms))::numeric, 2))
  FROM floor_run f, (SELECT * FROM tide.cycles ORDER BY id DESC LIMIT 1) c;

-- Quiet and busy steady states with the whole backlog still pending.  A
-- cycle after one that placed loads again; then nothing changes: quiet
-- cycles (tide.change_seq, no load).  Busy: every cycle follows one arrival
-- and one exit (a launcher's report), as at one of each per second.
CREATE TEMP TABLE cycle_times (kind text, ms float8);
CREATE FUNCTION pg_temp.timed_cycle(kind text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM tide.run_cycle();
    INSERT INTO cycle_times VALUES (kind, 1000 * extract(epoch FROM clock_timestamp() - t0));
END $$;
CREATE FUNCTION pg_temp.busy_step() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
BEGIN
    PERFORM tide.submit('queue-1', 'cpu=4, memory=32Gi, gpu=1');
    SELECT min(id) INTO a FROM tide.allocations WHERE state = 'assigned';
    IF a IS NOT NULL THEN
        PERFORM tide.started(a);
        PERFORM tide.exited(a, 0);
    END IF;
END $$;
-- settle: cycles until one is quiet (the reason backlog drains first)
CREATE FUNCTION pg_temp.settle() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    c bigint;
BEGIN
    FOR i IN 1 .. 200 LOOP
        c := tide.run_cycle();
        IF NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c) THEN
            RETURN i;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
SELECT format('settled after %s cycles', pg_temp.settle());
SELECT 'SELECT pg_temp.timed_cycle(''quiet'')' FROM generate_series(1, 10) \gexec
SELECT 'SELECT pg_temp.busy_step(); SELECT pg_temp.timed_cycle(''busy'')' FROM generate_series(1, 5) \gexec
SELECT format('%s steady jobs=%s cycles=%s min_ms=%s median_ms=%s max_ms=%s', kind,
              (SELECT count(*) FROM tide.jobs WHERE state = 'pending'), count(*),
              round(min(ms)::numeric, 1), round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1),
              round(max(ms)::numeric, 1))
  FROM cycle_times GROUP BY kind ORDER BY kind DESC;

-- The limit steps again, in the busy state (the first cycle's placements
-- are assigned allocations now), then with 100 jobs due.
\if :with_running
SELECT 'busy' AS limit_state \gset
\ir cycle_bench_limits.psql
BEGIN;
UPDATE tide.jobs SET started_at = now() - interval '2 days'
 WHERE id IN (SELECT id FROM tide.jobs WHERE state = 'running' AND time_limit IS NOT NULL ORDER BY id LIMIT 100);
SELECT format('limit steps with 100 jobs due (stopped): %s ms', round(pg_temp.limit_steps_ms()::numeric, 2));
ROLLBACK;
\endif

-- Steady state: 1k pending jobs, nothing fits (the cluster is full now),
-- after autovacuum would have cleaned up the first cycle's updates.
DELETE FROM tide.jobs WHERE state = 'pending' AND id > 1000 + (SELECT min(id) FROM tide.jobs WHERE state = 'pending');
VACUUM ANALYZE tide.jobs, tide.job_tasks, tide.allocations;
\timing on
SELECT 'cycle_id=' || tide.run_cycle();
\timing off
SELECT format('steady jobs=%s placed=%s load_ms=%s decide_ms=%s write_ms=%s total_ms=%s',
              jobs_considered, jobs_placed, round(load_ms::numeric, 1), round(decide_ms::numeric, 1),
              round(write_ms::numeric, 1), round(1000 * extract(epoch FROM finished_at - started_at)::numeric, 1))
  FROM tide.cycles ORDER BY id DESC LIMIT 1;
-- Peak memory of this backend (the cycles ran in it).
SELECT pg_backend_pid() AS bpid \gset
\setenv BPID :bpid
\! echo "memory backend $(grep VmHWM /proc/$BPID/status | tr -s ' \t' ' ')"
