-- What tide.demand costs at 10k pending x 1k nodes (docs/benchmarks.md):
-- the cluster and jobs of the cycle benchmark (cycle_cluster.psql), the
-- view read on the empty cluster, then after one cycle has filled it (the
-- demand is then what the free room cannot start).
--   psql -v jobs=10000 -v nodes=1000 -f bench/demand_bench.sql DB
\set ON_ERROR_STOP 1
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_tide CASCADE;
CREATE EXTENSION pg_tide;
\ir cycle_cluster.psql
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

CREATE FUNCTION pg_temp.timed(label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    ms text;
    best float8 := 'Infinity';
    i int;
BEGIN
    FOR i IN 1 .. 3 LOOP
        FOR line IN EXPLAIN (ANALYZE, TIMING OFF) SELECT * FROM tide.demand LOOP
            ms := substring(line FROM 'Execution Time: ([0-9.]+) ms');
            IF ms IS NOT NULL THEN
                best := least(best, ms::float8);
            END IF;
        END LOOP;
    END LOOP;
    RETURN format('%s: best of 3 %s ms; %s rows, %s jobs short, %s replicas', label, round(best::numeric, 1),
                  (SELECT count(*) FROM tide.demand),
                  (SELECT sum(jobs) FROM (SELECT DISTINCT resource_group, request, gpu_type, node_selector, jobs FROM tide.demand) d),
                  (SELECT sum(replicas) FROM (SELECT DISTINCT resource_group, request, gpu_type, node_selector, replicas FROM tide.demand) d));
END $$;
SELECT pg_temp.timed('empty cluster');
SELECT tide.run_cycle() AS cycle \gset
SELECT format('cycle placed %s jobs', jobs_placed) FROM tide.cycles WHERE id = :cycle;
ANALYZE tide.jobs, tide.allocations;
SELECT pg_temp.timed('after one cycle');
SELECT format('%s pending, %s live allocations, %s nodes with free GPUs',
              (SELECT count(*) FROM tide.jobs WHERE state = 'pending'),
              (SELECT count(*) FROM tide.allocations WHERE state <> 'released'),
              (SELECT count(*) FROM tide.node_usage WHERE tide.gpu_count(free_gpus) > 0));
