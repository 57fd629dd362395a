-- One session of bench/cycle_ab.sh: settle the cluster (cycles until the
-- reason backlog is empty and a cycle is quiet), then :cycles busy cycles
-- (10 arrivals into the ten queues and 10 exits before each, committed);
-- prints the busy cycles' CPU min and median, load, decide and write
-- medians (ms) and the kind of load, the backend's first busy cycle left
-- out.  The node and start timeouts are off: nothing sends heartbeats or
-- starts what is placed, and the cluster is reused for many sessions.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET jit = off;
SET tide.node_timeout = 0;
SET tide.start_timeout = 0;
CREATE FUNCTION pg_temp.cpu() RETURNS bigint LANGUAGE sql AS $$
    SELECT split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::bigint $$;
CREATE TEMP TABLE busy (n int, cpu_ms float8, load_ms float8, decide_ms float8, write_ms float8, load text);
CREATE FUNCTION pg_temp.settle() RETURNS int LANGUAGE plpgsql AS $$
DECLARE c bigint;
BEGIN
    FOR i IN 1 .. 1000 LOOP
        c := tide.run_cycle();
        IF NOT EXISTS (SELECT 1 FROM tide.reason_backlog)
           AND NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c) THEN
            RETURN i;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'the cluster did not settle in 1000 cycles';
END $$;
SELECT pg_temp.settle() \g /dev/null
CREATE PROCEDURE pg_temp.busy(n int) LANGUAGE plpgsql AS $$
DECLARE a bigint; c0 bigint; c bigint; r record;
BEGIN
    FOR i IN 1 .. 10 LOOP
        PERFORM tide.submit(format('queue-%s', i % 10), 'cpu=4, memory=32Gi, gpu=1');
    END LOOP;
    FOR a IN SELECT id FROM tide.allocations WHERE state = 'assigned' ORDER BY id LIMIT 10 LOOP
        PERFORM tide.started(a);
        PERFORM tide.exited(a, 0);
    END LOOP;
    COMMIT;
    c0 := pg_temp.cpu();
    c := tide.run_cycle();
    SELECT * INTO r FROM tide.cycles WHERE id = c;
    INSERT INTO busy VALUES (n, (pg_temp.cpu() - c0) / 1e6, r.load_ms, r.decide_ms, r.write_ms, r.load);
    COMMIT;
END $$;
SELECT format('CALL pg_temp.busy(%s)', k) FROM generate_series(1, :cycles) k \gexec
SELECT format('cpu min %s median %s; load %s decide %s write %s; %s cycles, loads: %s',
              round(min(cpu_ms)::numeric, 1), round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY load_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY decide_ms))::numeric, 1),
              round((percentile_cont(0.5) WITHIN GROUP (ORDER BY write_ms))::numeric, 1),
              count(*), string_agg(DISTINCT load, ','))
  FROM busy WHERE n > 1;
