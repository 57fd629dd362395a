-- Memory of a looping backend: a synthetic cluster as in cycle_bench.sql,
-- then many busy cycles in this one backend, each after a few arrivals and
-- exits and committed as tide.cycle_loop() commits, with the backend's
-- resident size (VmRSS, /proc/self/status) and PostgreSQL's own accounting
-- (pg_backend_memory_contexts) printed every `every` cycles.
-- Run through bench/cycle_memory.sh, or:
--   psql -v jobs=20000 -v nodes=2000 -v cycles=300 -v every=25 \
--        -v arrivals=10 -v exits=10 -f bench/cycle_memory.sql DB
-- Needs a superuser (it reads /proc/self/status with pg_read_file).
\ir bench_start.psql
SET client_min_messages = notice;
-- The busy steps stand in for other sessions (submitters, launchers): no
-- JIT for them here, as the cycle itself runs without (60_cycle.sql).
SET jit = off;
-- No launchers here: no heartbeats, so no node may time out (R-C3).
SET tide.node_timeout = 0;
\ir cycle_cluster.psql
DROP TABLE shapes;
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

-- This backend's resident size now and at its peak (VmRSS, VmHWM), split
-- into its private memory (RssAnon), the shared memory it has touched
-- (RssShmem: shared buffers, which count in VmRSS though every backend
-- shares them) and mapped files (RssFile: the programs' code), and
-- what PostgreSQL's memory contexts hold; and, for comparison with
-- RssShmem, the size of pg_tide's tables and indexes; all in kB; and the
-- pending jobs, the size of the snapshot.
CREATE FUNCTION pg_temp.mem_line(label text) RETURNS text LANGUAGE sql AS $$
SELECT format('%s pending=%s rss_kb=%s hwm_kb=%s anon_kb=%s shmem_kb=%s file_kb=%s contexts_kb=%s tables_kb=%s', label,
              (SELECT count(*) FROM tide.jobs WHERE state = 'pending'),
              (regexp_match(s, 'VmRSS:\s+(\d+)'))[1], (regexp_match(s, 'VmHWM:\s+(\d+)'))[1],
              (regexp_match(s, 'RssAnon:\s+(\d+)'))[1], (regexp_match(s, 'RssShmem:\s+(\d+)'))[1],
              (regexp_match(s, 'RssFile:\s+(\d+)'))[1],
              (SELECT sum(total_bytes)::bigint / 1024 FROM pg_backend_memory_contexts),
              (SELECT sum(pg_total_relation_size(c.oid))::bigint / 1024
                 FROM pg_class c WHERE c.relnamespace = 'tide'::regnamespace AND c.relkind IN ('r', 'm')))
  FROM pg_read_file('/proc/self/status') s
$$;
-- A busy step: `arrivals` new one-GPU jobs; every assigned allocation
-- started (as its launcher reports within seconds: left assigned, the
-- first cycle's placements would meet tide.start_timeout), every evicted
-- one stopped (as its launcher reports: left releasing, the evictions
-- pile up, and so do the claims their preemptors hold, R-E6), and the
-- `exits` oldest running ones exited.  With a backlog level, the oldest
-- pending jobs beyond it are cancelled, so that the snapshot stays the
-- same size over thousands of cycles (else the arrivals that find no room
-- grow it, and the memory with it).
CREATE FUNCTION pg_temp.busy_step(arrivals int, exits int, backlog bigint DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    extra bigint;
BEGIN
    PERFORM tide.submit(format('queue-%s', i % 10), 'cpu=4, memory=32Gi, gpu=1') FROM generate_series(1, arrivals) i;
    SELECT array_agg(id) INTO ids FROM tide.allocations WHERE state = 'assigned';
    IF ids IS NOT NULL THEN
        PERFORM tide.report_started(ids);
    END IF;
    SELECT array_agg(id) INTO ids FROM tide.allocations WHERE state = 'releasing';
    IF ids IS NOT NULL THEN
        PERFORM tide.report_evicted(ids);
    END IF;
    SELECT array_agg(id) INTO ids FROM (SELECT id FROM tide.allocations WHERE state = 'running' ORDER BY id LIMIT exits) a;
    IF ids IS NOT NULL THEN
        PERFORM tide.report_exited(ids, array_fill(0, ARRAY[cardinality(ids)]));
    END IF;
    IF backlog IS NOT NULL THEN
        extra := (SELECT count(*) FROM tide.jobs WHERE state = 'pending') - backlog;
        IF extra > 0 THEN
            PERFORM tide.cancel(id) FROM (SELECT id FROM tide.jobs WHERE state = 'pending' ORDER BY id LIMIT extra) j;
        END IF;
    END IF;
END $$;

SELECT pg_temp.mem_line('before the first cycle');
\timing on
SELECT 'first cycle ' || tide.run_cycle();
\timing off
SELECT pg_temp.mem_line('after the first cycle');
-- Settle: cycles until one is quiet.  The first cycle's pending reasons
-- reach their rows tide.reason_updates_per_cycle at a time (the backlog),
-- so at 100k pending this takes about a hundred cycles, each rewriting that
-- many job rows.
CREATE PROCEDURE pg_temp.settle(every int) LANGUAGE plpgsql AS $$
DECLARE
    c bigint;
BEGIN
    FOR i IN 1 .. 1000 LOOP
        PERFORM pg_temp.busy_step(0, 0);	-- the launchers start what was placed
        c := tide.run_cycle();
        COMMIT;
        IF NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c) THEN
            RAISE NOTICE 'settled after % cycles', i;
            EXIT;
        END IF;
        IF i % every = 0 THEN
            RAISE NOTICE '%', pg_temp.mem_line(format('settling, cycle %s', i));
        END IF;
    END LOOP;
END $$;
CALL pg_temp.settle(:every);
SELECT pg_temp.mem_line('settled');

-- The busy cycles, each committed and in its own exception block, as
-- tide.cycle_loop() runs them (without its sleep); the memory every
-- `every` cycles, then the cycles' median and slowest times.
SELECT max(id) AS first_busy FROM tide.cycles \gset
CREATE PROCEDURE pg_temp.busy_loop(cycles int, every int, arrivals int, exits int) LANGUAGE plpgsql AS $$
DECLARE
    backlog bigint := (SELECT count(*) FROM tide.jobs WHERE state = 'pending');
BEGIN
    FOR i IN 1 .. cycles LOOP
        PERFORM pg_temp.busy_step(arrivals, exits, backlog);
        COMMIT;
        PERFORM tide._apply_reload();
        BEGIN
            PERFORM tide.run_cycle();
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'pg_tide: scheduling cycle failed: % (SQLSTATE %)', SQLERRM, SQLSTATE;
        END;
        COMMIT;
        IF i % every = 0 THEN
            RAISE NOTICE '%', pg_temp.mem_line(format('busy cycle %s', i));
        END IF;
    END LOOP;
END $$;
CALL pg_temp.busy_loop(:cycles, :every, :arrivals, :exits);
SELECT format('busy cycles=%s median_ms=%s max_ms=%s load_median_ms=%s decide_median_ms=%s write_median_ms=%s', count(*),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1), round(max(ms)::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY load_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY decide_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY write_ms))::numeric, 1))
  FROM (SELECT 1000 * extract(epoch FROM finished_at - started_at) AS ms, load_ms, decide_ms, write_ms
          FROM tide.cycles WHERE id > :first_busy) c;
SELECT format('pending=%s running or assigned=%s', count(*) FILTER (WHERE state = 'pending'),
              count(*) FILTER (WHERE state IN ('allocated', 'running')))
  FROM tide.jobs;
