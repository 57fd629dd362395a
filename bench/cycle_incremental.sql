-- Incremental against full loads in one session (bench/cycle_incremental.sh):
-- the first cycle three times each way, rolled back; then, the cluster
-- settled, busy cycles (10 arrivals and 10 exits before each, committed)
-- alternating tide.incremental_load off and on in blocks of four.  The
-- first cycle of an "on" block loads in full and keeps its rows, so the
-- table groups by the load each cycle made.  -v jobs=N -v nodes=N.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_tide;
\ir cycle_cluster.psql
VACUUM ANALYZE;
SET jit = off;
CREATE FUNCTION pg_temp.cpu() RETURNS bigint LANGUAGE sql AS $$ SELECT split_part(pg_read_file('/proc/' || pg_backend_pid() || '/schedstat'), ' ', 1)::bigint $$;
CREATE TABLE ab (kind text, phase text, cpu_ms float8, load_ms float8, decide_ms float8, write_ms float8, load text);
-- first cycles, rolled back: off, on, off, on
CREATE PROCEDURE pg_temp.first(inc boolean) LANGUAGE plpgsql AS $$
DECLARE c0 bigint; c bigint; r record;
BEGIN
    PERFORM set_config('tide.incremental_load', inc::text, true);
    c0 := pg_temp.cpu();
    c := tide.run_cycle();
    SELECT * INTO r FROM tide.cycles WHERE id = c;
    RAISE WARNING 'first cycle incremental_load=%: cpu % load % decide % write %', inc, round((pg_temp.cpu() - c0) / 1e6), round(r.load_ms::numeric, 1), round(r.decide_ms::numeric, 1), round(r.write_ms::numeric, 1);
    ROLLBACK;
END $$;
CALL pg_temp.first(false); CALL pg_temp.first(true); CALL pg_temp.first(false); CALL pg_temp.first(true); CALL pg_temp.first(false); CALL pg_temp.first(true);
-- settle, then busy cycles alternating off and on
SELECT tide.run_cycle() \g /dev/null
CREATE FUNCTION pg_temp.settle() RETURNS int LANGUAGE plpgsql AS $$
DECLARE c bigint;
BEGIN
    FOR i IN 1 .. 400 LOOP
        c := tide.run_cycle();
        IF NOT EXISTS (SELECT 1 FROM tide.reason_backlog) AND NOT EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c) THEN RETURN i; END IF;
    END LOOP;
    RETURN NULL;
END $$;
SELECT pg_temp.settle();
CREATE PROCEDURE pg_temp.busy(inc boolean) LANGUAGE plpgsql AS $$
DECLARE a bigint; c0 bigint; c bigint; r record;
BEGIN
    FOR i IN 1..10 LOOP PERFORM tide.submit(format('queue-%s', i % 10), 'cpu=4, memory=32Gi, gpu=1'); END LOOP;
    FOR a IN SELECT id FROM tide.allocations WHERE state = 'assigned' ORDER BY id LIMIT 10 LOOP
        PERFORM tide.started(a); PERFORM tide.exited(a, 0);
    END LOOP;
    COMMIT;
    PERFORM set_config('tide.incremental_load', inc::text, false);
    c0 := pg_temp.cpu();
    c := tide.run_cycle();
    SELECT * INTO r FROM tide.cycles WHERE id = c;
    INSERT INTO ab VALUES (CASE WHEN inc THEN 'on' ELSE 'off' END, 'busy', (pg_temp.cpu() - c0) / 1e6, r.load_ms, r.decide_ms, r.write_ms, r.load);
    COMMIT;
END $$;
-- on needs a kept load: each 'on' follows an 'on'; blocks of 3, first of each block discarded
SELECT 'CALL pg_temp.busy(' || (b % 2 = 0) || ')' FROM generate_series(1, 8) b, generate_series(1, 4) k ORDER BY b, k \gexec
SELECT kind, load, count(*), round(min(cpu_ms)::numeric,1) AS min_cpu, round((percentile_cont(0.5) WITHIN GROUP (ORDER BY cpu_ms))::numeric,1) AS med_cpu,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY load_ms))::numeric,1) AS med_load, round((percentile_cont(0.5) WITHIN GROUP (ORDER BY decide_ms))::numeric,1) AS med_decide,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY write_ms))::numeric,1) AS med_write
  FROM ab GROUP BY kind, load ORDER BY kind, load;
