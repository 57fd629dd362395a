-- What tide.demand costs at 10k pending x 1k nodes (docs/benchmarks.md):
-- the cluster and jobs of the cycle benchmark (cycle_cluster.psql), the
-- view read on the empty cluster, then after one cycle has filled it (the
-- demand is then what the free room cannot start).
--   psql -v jobs=10000 -v nodes=1000 -f bench/demand_bench.sql DB
\ir bench_start.psql
\ir cycle_cluster.psql
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;

-- EXPLAIN ANALYZE of the first read (it plans the query), then five reads:
-- the median wall time and the median CPU time of this backend
-- (/proc/PID/schedstat, as the cycle benchmark reads it: steadier than
-- wall time on a shared machine).
CREATE FUNCTION pg_temp.cpu_ns() RETURNS bigint LANGUAGE sql AS $$
    SELECT split_part(pg_read_file(format('/proc/%s/schedstat', pg_backend_pid())), ' ', 1)::bigint $$;
CREATE FUNCTION pg_temp.timed(label text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    walls float8[] := '{}';
    cpus float8[] := '{}';
    t0 timestamptz;
    c0 bigint;
    n bigint;
    i int;
    line text;
    explained text;
BEGIN
    FOR line IN EXPLAIN (ANALYZE, TIMING OFF) SELECT * FROM tide.demand LOOP
        explained := coalesce(substring(line FROM 'Execution Time: ([0-9.]+) ms'), explained);
    END LOOP;
    FOR i IN 1 .. 5 LOOP
        t0 := clock_timestamp();
        c0 := pg_temp.cpu_ns();
        SELECT count(*) INTO n FROM tide.demand;
        cpus := cpus || ((pg_temp.cpu_ns() - c0) / 1e6)::float8;
        walls := walls || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
    END LOOP;
    RETURN format('%s: EXPLAIN ANALYZE %s ms (the first read, planning it); then median of 5 %s ms wall, %s ms CPU (the first of them %s ms); %s rows, %s jobs short, %s replicas', label,
                  explained,
                  round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(walls) x)::numeric, 1),
                  round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(cpus) x)::numeric, 1),
                  round(walls[1]::numeric, 1), n,
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
