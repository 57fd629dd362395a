-- tide.forecast(): when the engine's own order starts each pending job if
-- running jobs end at their time limits (src/forecast.c, the stepping in
-- src/engine/forecast.c).  The same load and decide as tide.run_cycle(),
-- in the caller's snapshot: what the caller's transaction changed is seen,
-- so BEGIN; UPDATE tide.queues ...; SELECT * FROM tide.forecast(); ROLLBACK;
-- is a what-if.  Writes nothing; models no eviction.

-- The engine's rows: stop_job not NULL stops once that job is placed.  A
-- submitter gets its own jobs' rows (every job counts; other owners' jobs
-- it waits on are counted in why, never named).
CREATE FUNCTION tide._forecast(stop_job bigint,
        OUT job_id bigint, OUT start_at timestamptz, OUT unknown_because bigint[], OUT why text)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS 'MODULE_PATHNAME', 'tide_forecast_rows';
COMMENT ON FUNCTION tide._forecast(bigint) IS
    'the engine''s forecast of the pending jobs the cycle loads (start_at, the jobs without a time limit it waits on, why not), stopping once stop_job is placed when given';
REVOKE ALL ON FUNCTION tide._forecast(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._forecast(bigint) TO tide_admin, tide_reader, tide_submitter;

-- Every pending job: the engine's answer, or why it has none (waiting jobs
-- are not loaded by the cycle: dependencies, holds, begin_at, array
-- throttle, R-P1..R-P5).
CREATE FUNCTION tide.forecast()
    RETURNS TABLE (job_id bigint, queue text, start_at timestamptz, unknown_because bigint[], why text)
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT j.id, j.queue, f.start_at, f.unknown_because,
       coalesce(f.why,
                CASE WHEN f.job_id IS NOT NULL THEN NULL
                     WHEN j.held THEN 'held (R-P2)'
                     WHEN j.queue_held THEN 'its queue is held (R-P4)'
                     WHEN j.dependencies_unmet > 0 THEN 'dependencies not met (R-P1)'
                     WHEN j.deferred THEN pg_catalog.format('deferred until %s (R-P3)', j.begin_at)
                     WHEN j.array_throttled THEN 'its array runs its most at a time (R-P5)'
                     WHEN j.unschedulable THEN 'unschedulable: no node could ever hold it (R-A2)'
                     ELSE 'not loaded by the cycle' END)
  FROM tide.jobs j
  LEFT JOIN tide._forecast(NULL) f ON f.job_id = j.id
 WHERE j.state = 'pending'
 ORDER BY f.start_at NULLS LAST, j.id
$$;
COMMENT ON FUNCTION tide.forecast() IS
    'a row per pending job with when the engine''s own order starts it if running jobs end at their time limits (a job past its limit ends now), computed by the same load and engine as the cycle, stepped from one end to the next; NULL with the jobs without a time limit it waits on (unknown_because) or why; reads the caller''s snapshot (what-if in a rolled-back transaction), writes nothing, models no eviction; a submitter sees its own jobs, other owners'' counted, never named';
REVOKE ALL ON FUNCTION tide.forecast() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.forecast() TO tide_admin, tide_reader, tide_submitter;
