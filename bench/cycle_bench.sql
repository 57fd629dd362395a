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
-- With -v pipelines=1: a fifth of the backlog waits on a dependency (each
-- such job on the one before it, still pending), and ten arrays of 1,000
-- members run at most 50 at a time each, as pipelines and sweeps leave it.
\if :pipelines
INSERT INTO tide.job_dependencies (job_id, depends_on, condition)
SELECT i, i - 1, 'succeeded' FROM shapes WHERE i % 5 = 0;
SELECT count(*) FROM (SELECT tide.submit_array(format('queue-%s', a), 'cpu=4, memory=32Gi, gpu=1', 1000, 50)
                        FROM generate_series(0, 9) a) s \g /dev/null
SELECT format('pipelines: %s pending jobs, %s of them waiting (%s on a dependency, %s array members throttled)',
              count(*), count(*) FILTER (WHERE waiting), count(*) FILTER (WHERE dependencies_unmet > 0),
              count(*) FILTER (WHERE array_throttled))
  FROM tide.jobs WHERE state = 'pending';
\endif
-- With -v running=N (cycle_bench.sh --limits): N running one-GPU jobs with
-- time limits of 1 to 24 hours (none due), on GPUs 6 and 7 of the nodes,
-- placed and started as launchers would have.
\if :{?running}
\else
\set running 0
\endif
SELECT :running > 0 AS with_running \gset
\if :with_running
BEGIN;
CREATE TEMP TABLE running_jobs AS
WITH j AS (
    INSERT INTO tide.jobs (queue, time_limit, created_at)
    SELECT format('queue-%s', i % 10), make_interval(hours => 1 + i % 24), now() - interval '2 days'
      FROM generate_series(0, :running - 1) i
    RETURNING id)
SELECT id, row_number() OVER (ORDER BY id) - 1 AS i FROM j;
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
SELECT id, 'main', 1, 'cpu=4, memory=32Gi, gpu=1' FROM running_jobs;
UPDATE tide.jobs SET state = 'allocated', state_reason = 'placed by the bench' WHERE id IN (SELECT id FROM running_jobs);
INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus)
SELECT id, 'main', 0, format('node-%s', lpad((1 + i % :nodes)::text, 6, '0')), 'cpu=4, memory=32Gi, gpu=1',
       (6 + (i / :nodes) % 2)::text::tide.gpumask
  FROM running_jobs;
UPDATE tide.allocations SET state = 'running', started_at = now() WHERE job_id IN (SELECT id FROM running_jobs);
COMMIT;
SELECT format('running jobs with time limits: %s', count(*)) FROM tide.jobs WHERE state = 'running' AND time_limit IS NOT NULL;
\endif
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

-- The SQL floor: the cycle's five input queries, and a bulk insert of as
-- many allocation rows into a table shaped like tide.allocations (same
-- columns and indexes, no triggers): what any cycle must pay.
CREATE TABLE floor_alloc (LIKE tide.allocations INCLUDING ALL);
-- and, for context, rewriting as many job rows (state or reason) in a copy
-- of tide.jobs (same indexes, no triggers).
CREATE TABLE floor_jobs (LIKE tide.jobs INCLUDING ALL);
-- (every column but the generated ones, which the copies compute as tide.jobs does)
SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS jobcols
  FROM pg_attribute WHERE attrelid = 'tide.jobs'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' \gset
INSERT INTO floor_jobs (:jobcols) OVERRIDING SYSTEM VALUE SELECT :jobcols FROM tide.jobs;
VACUUM ANALYZE floor_jobs;
-- the same with room for HOT updates (fillfactor 70: reason-only updates touch no index)
CREATE TABLE floor_jobs_ff (LIKE tide.jobs INCLUDING ALL) WITH (fillfactor = 70);
INSERT INTO floor_jobs_ff (:jobcols) OVERRIDING SYSTEM VALUE SELECT :jobcols FROM tide.jobs;
VACUUM ANALYZE floor_jobs_ff;
-- and what the contract adds for each placed job: its row moves to
-- allocated (a new row version) and the change is logged in job_events.
-- The copies keep every column, default, CHECK constraint and index (LIKE
-- ... INCLUDING ALL; no triggers, no foreign keys).  tide.job_events is
-- partitioned with its key and indexes on the partitions: a LIKE copy of the
-- parent would have none, so the floor's is partitioned the same way.
CREATE TABLE floor_events (LIKE tide.job_events INCLUDING ALL) PARTITION BY RANGE (at);
CREATE TABLE floor_events_default PARTITION OF floor_events (PRIMARY KEY (id)) DEFAULT;
CREATE INDEX ON floor_events_default (at);
CREATE INDEX ON floor_events_default (job_id, id);
DO $$
BEGIN
    IF (SELECT array_agg(d ORDER BY d) FROM (SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') AS d
                                               FROM pg_index WHERE indrelid = 'tide.job_events_default'::regclass) i)
       IS DISTINCT FROM
       (SELECT array_agg(d ORDER BY d) FROM (SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') AS d
                                               FROM pg_index WHERE indrelid = 'floor_events_default'::regclass) i) THEN
        RAISE EXCEPTION 'the floor''s job_events indexes are not those of tide.job_events_default';
    END IF;
END $$;
CREATE TABLE floor_jobs_placed (LIKE tide.jobs INCLUDING ALL) WITH (fillfactor = 70);
INSERT INTO floor_jobs_placed (:jobcols) OVERRIDING SYSTEM VALUE SELECT :jobcols FROM tide.jobs;
VACUUM ANALYZE floor_jobs_placed;
CREATE FUNCTION pg_temp.floor_ms(nalloc int, nnodes int, placed_ids bigint[])
    RETURNS TABLE (select_ms float8, insert_ms float8, placed_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    PERFORM n.name, n.resource_group, n.capacity, n.gpu_type, n.gpu_topology, n.state, n.allow_cpu_jobs, n.labels
       FROM tide.nodes n ORDER BY n.name COLLATE "C";
    PERFORM q.* FROM tide.queues q ORDER BY q.name COLLATE "C";
    PERFORM j.id, j.queue, j.priority, j.created_at, j.idle, j.reserve, j.retry_of, j.preemptable,
            j.service_type, j.min_available, j.gpu_type, j.node_selector, j.time_limit, j.avoid_nodes, j.pending_reason
       FROM tide.jobs j WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested AND NOT j.waiting ORDER BY j.id;
    PERFORM t.job_id, t.role, t.replicas, t.request
       FROM tide.job_tasks t JOIN tide.jobs j ON j.id = t.job_id
      WHERE j.state = 'pending' AND NOT j.unschedulable AND NOT j.cancel_requested AND NOT j.waiting
      ORDER BY t.job_id;
    PERFORM a.* FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id WHERE a.state <> 'released';
    select_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    t0 := clock_timestamp();
    INSERT INTO floor_alloc (job_id, role, replica, node, resources, gpus, gpu_milli, cycle_id)
    SELECT i, 'main', 0, format('node-%s', lpad((1 + i % nnodes)::text, 6, '0')),
           'cpu=4, memory=32Gi, gpu=1'::tide.resvec, '0'::tide.gpumask, NULL, 1
      FROM generate_series(1, nalloc) i;
    insert_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    t0 := clock_timestamp();
    WITH placed AS (
        UPDATE floor_jobs_placed f SET state = 'allocated', state_reason = 'placed on node-000001'
          FROM unnest(placed_ids) AS p(id)
         WHERE f.id = p.id
        RETURNING f.id)
    INSERT INTO floor_events (job_id, old_state, new_state, reason, cycle_id)
    SELECT id, 'pending', 'allocated', 'placed on node-000001', 1 FROM placed;
    placed_ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
    RETURN NEXT;
END $$;
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

-- Backend CPU time too (/proc/PID/schedstat, ns): on a shared machine the
-- wall times stretch with the load, CPU times much less.
\! awk '{print $1}' /proc/$BPID/schedstat > /tmp/tide_bench_cpu.$BPID
\timing on
SELECT 'cycle_id=' || tide.run_cycle();
\timing off
\! echo "cycle cpu_ms=$(( ($(awk '{print $1}' /proc/$BPID/schedstat) - $(cat /tmp/tide_bench_cpu.$BPID)) / 1000000 ))" > /tmp/tide_bench_cpu_cycle.$BPID
SELECT format('cycle jobs=%s nodes=%s placed=%s allocations=%s unschedulable=%s reasons_deferred=%s load_ms=%s decide_ms=%s write_ms=%s total_ms=%s',
              jobs_considered, :nodes, jobs_placed, allocations_made, jobs_unschedulable, reasons_deferred,
              round(load_ms::numeric, 1), round(decide_ms::numeric, 1), round(write_ms::numeric, 1),
              round(1000 * extract(epoch FROM finished_at - started_at)::numeric, 1))
  FROM tide.cycles ORDER BY id DESC LIMIT 1;
-- the floor moves the same jobs the cycle placed (scattered over the table as theirs are)
CREATE TEMP TABLE placed_now AS SELECT array_agg(DISTINCT job_id) AS ids FROM tide.allocations;
\! awk '{print $1}' /proc/$BPID/schedstat > /tmp/tide_bench_cpu.$BPID
CREATE TEMP TABLE floor_run AS
SELECT * FROM pg_temp.floor_ms((SELECT allocations_made FROM tide.cycles ORDER BY id DESC LIMIT 1), :nodes,
                               (SELECT ids FROM placed_now));
\! echo "$(cat /tmp/tide_bench_cpu_cycle.$BPID), contract floor cpu_ms=$(( ($(awk '{print $1}' /proc/$BPID/schedstat) - $(cat /tmp/tide_bench_cpu.$BPID)) / 1000000 ))"; rm -f /tmp/tide_bench_cpu.$BPID /tmp/tide_bench_cpu_cycle.$BPID
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
