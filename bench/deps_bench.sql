-- What adding, removing and ending dependencies costs when many change in
-- one statement (docs/benchmarks.md): the pending jobs of the cycle
-- benchmark's cluster (cycle_cluster.psql), no cycle run.  A fifth of them
-- are given a dependency on the job before them (as cycle_extras.psql
-- does) in one INSERT, right after the jobs were inserted as that setup
-- does, before any ANALYZE; then, with statistics, the rows are deleted
-- in one DELETE and inserted again; then the jobs they wait for are
-- cancelled in one UPDATE, which cancels their dependents.  Each line: the
-- statement's wall and CPU time (this backend's, /proc/PID/schedstat),
-- its rows, and what it left.
--   psql -v jobs=100000 -v nodes=10000 -f bench/deps_bench.sql DB
\ir bench_start.psql
SET jit = off;
\ir cycle_cluster.psql

CREATE FUNCTION pg_temp.cpu_ns() RETURNS bigint LANGUAGE sql AS $$
    SELECT split_part(pg_read_file(format('/proc/%s/schedstat', pg_backend_pid())), ' ', 1)::bigint $$;
CREATE FUNCTION pg_temp.timed(label text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    c0 bigint := pg_temp.cpu_ns();
    n bigint;
BEGIN
    EXECUTE q;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN format('%s: %s rows, %s ms wall, %s ms CPU; then %s pending jobs wait on a dependency, %s are cancelled',
                  label, n, round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000),
                  round((pg_temp.cpu_ns() - c0) / 1e6),
                  (SELECT count(*) FROM tide.jobs WHERE state = 'pending' AND dependencies_unmet > 0),
                  (SELECT count(*) FROM tide.jobs WHERE state = 'cancelled'));
END $$;

SELECT format('%s pending jobs, %s load average', count(*),
              (string_to_array(pg_read_file('/proc/loadavg'), ' '))[1])
  FROM tide.jobs WHERE state = 'pending';
SELECT pg_temp.timed('insert, no statistics yet',
    $$INSERT INTO tide.job_dependencies (job_id, depends_on, condition)
      SELECT i, i - 1, 'succeeded' FROM shapes WHERE i % 5 = 0$$);
VACUUM ANALYZE tide.jobs, tide.job_dependencies;
SELECT pg_temp.timed('delete',
    $$DELETE FROM tide.job_dependencies d USING shapes s WHERE d.job_id = s.i$$);
SELECT pg_temp.timed('insert',
    $$INSERT INTO tide.job_dependencies (job_id, depends_on, condition)
      SELECT i, i - 1, 'succeeded' FROM shapes WHERE i % 5 = 0$$);
SELECT pg_temp.timed('cancel the jobs waited for',
    $$UPDATE tide.jobs j SET cancel_requested = true
        FROM shapes s WHERE j.id = s.i - 1 AND s.i % 5 = 0$$);
