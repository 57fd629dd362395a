-- What tide.forecast() and tide.estimate_start() cost (docs/benchmarks.md):
-- the cluster and jobs of the cycle benchmark (cycle_cluster.psql), every
-- job given a time limit (30 minutes to a day), one cycle to fill the
-- cluster, then the forecast of every pending job and the estimate of one.
--   psql -v jobs=10000 -v nodes=1000 -f bench/forecast_bench.sql DB
-- (bench/forecast_bench.sh runs it on a throwaway server, --big at 100k x 10k
-- too: about four minutes there, most of it the cluster and the cycle).
\ir bench_start.psql
\ir cycle_cluster.psql
UPDATE tide.jobs SET time_limit = (ARRAY['30 minutes', '1 hour', '2 hours', '4 hours', '8 hours', '1 day'])[1 + id % 6]::interval;
ANALYZE tide.jobs, tide.job_tasks, tide.nodes, tide.queues, tide.allocations;
SELECT tide.run_cycle() AS cycle \gset
SELECT format('cycle placed %s jobs; %s pending, %s live allocations', jobs_placed,
              (SELECT count(*) FROM tide.jobs WHERE state = 'pending'),
              (SELECT count(*) FROM tide.allocations WHERE state <> 'released'))
  FROM tide.cycles WHERE id = :cycle;
ANALYZE tide.jobs, tide.allocations;

-- Five calls each: median wall and CPU time of this backend
-- (/proc/PID/schedstat, as the other benchmarks read it).
CREATE FUNCTION pg_temp.cpu_ns() RETURNS bigint LANGUAGE sql AS $$
    SELECT split_part(pg_read_file(format('/proc/%s/schedstat', pg_backend_pid())), ' ', 1)::bigint $$;
CREATE FUNCTION pg_temp.timed(label text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    walls float8[] := '{}';
    cpus float8[] := '{}';
    t0 timestamptz;
    c0 bigint;
    res text;
BEGIN
    FOR i IN 1 .. 5 LOOP
        t0 := clock_timestamp();
        c0 := pg_temp.cpu_ns();
        EXECUTE q INTO res;
        cpus := cpus || ((pg_temp.cpu_ns() - c0) / 1e6)::float8;
        walls := walls || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
    END LOOP;
    RETURN format('%s: median of 5 %s ms wall, %s ms CPU (the first %s ms); %s', label,
                  round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(walls) x)::numeric, 1),
                  round((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(cpus) x)::numeric, 1),
                  round(walls[1]::numeric, 1), res);
END $$;
SELECT pg_temp.timed('forecast of every pending job',
    $$SELECT format('%s rows, %s with a start, %s distinct starts, the last in %s',
                    count(*), count(start_at), count(DISTINCT start_at), max(start_at) - now())
        FROM tide.forecast()$$);
-- one job early in the order, and the one the forecast starts last
SELECT f.job_id AS first_job FROM tide.forecast() f WHERE f.start_at IS NOT NULL ORDER BY f.start_at, f.job_id LIMIT 1 \gset
SELECT f.job_id AS last_job FROM tide.forecast() f WHERE f.start_at IS NOT NULL ORDER BY f.start_at DESC, f.job_id DESC LIMIT 1 \gset
SELECT pg_temp.timed('estimate_start of a job starting first', format('SELECT tide.estimate_start(%s)::text', :first_job));
SELECT pg_temp.timed('estimate_start of the job starting last', format('SELECT tide.estimate_start(%s)::text', :last_job));
