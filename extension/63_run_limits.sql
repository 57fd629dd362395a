-- A job's run bounded at both ends (docs/policy.md R-T1, R-T4;
-- docs/lifecycle.md#time-limits-and-start-timeouts): the database stops a
-- running job whose time limit has passed, and releases a placed job whose
-- replicas are not all running within tide.start_timeout.  Both are steps
-- of every scheduling cycle before its load (src/cycle_limits.c), read
-- through partial indexes that hold only running jobs with a limit and
-- placed replicas not started: a cycle reads the due rows, nothing else.
-- Both stop work through the eviction path (tide._evict: the job
-- evicting, its allocations releasing, one NOTIFY per node), so they hold
-- whether the launchers are up, down or restarting.

-- When a running job's time limit ends it: started_at + time_limit, with
-- days counted as 24 hours (in UTC), so that the value does not depend on
-- the session's time zone and can be indexed.  Plain SQL without SET, so
-- that it is inlined and a query's condition matches the index.
CREATE FUNCTION tide._limit_at(started_at timestamptz, time_limit interval) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT pg_catalog.timezone('UTC', pg_catalog.timezone('UTC', started_at) OPERATOR(pg_catalog.+) time_limit) $$;
COMMENT ON FUNCTION tide._limit_at(timestamptz, interval) IS
    'the end of a running job''s time limit: started_at + time_limit, a day being 24 hours (R-T1); immutable, for jobs_limit_idx';

-- Running jobs by the end of their limit (R-T1): the cycle's step reads
-- the due ones; a running job that is not due costs it nothing.
CREATE INDEX jobs_limit_idx ON tide.jobs (tide._limit_at(started_at, time_limit))
    WHERE state = 'running' AND time_limit IS NOT NULL;
-- Placed replicas not started yet, by placement time (R-T4).
CREATE INDEX allocations_assigned_idx ON tide.allocations (created_at) WHERE state = 'assigned';

-- Is anything due at now_: a running job's limit (limits), a placement
-- older than start_timeout not started (starts; NULL start_timeout: off)?
-- Each asks its index for its earliest entry: one descent, whatever the
-- planner estimates (an EXISTS of the due rows was planned as a scan of
-- every job when the statistics expected many).  The cycle runs a step
-- only when this says it is due (src/cycle_limits.c).
CREATE FUNCTION tide._limits_due(now_ timestamptz, start_timeout interval, OUT limits boolean, OUT starts boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce((SELECT min(tide._limit_at(j.started_at, j.time_limit)) FROM tide.jobs j
                  WHERE j.state = 'running' AND j.time_limit IS NOT NULL) <= now_, false),
       coalesce((SELECT min(a.created_at) FROM tide.allocations a WHERE a.state = 'assigned') <= now_ - start_timeout, false)
$$;
COMMENT ON FUNCTION tide._limits_due(timestamptz, interval) IS
    'whether a running job''s time limit has passed (R-T1) and whether a placement older than start_timeout is not started (R-T4; NULL: off), each from its index''s earliest entry: the cycle''s cheap check before its limit steps';

-- An interval as a person reads a time limit: HH:MM:SS, days before it
-- when it has any ('2 days 03:00:00'), fractions of a second only if any.
CREATE FUNCTION tide._hms(d interval) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE WHEN x.days = 0 THEN ''
            WHEN x.days = 1 THEN '1 day '
            ELSE x.days::text || ' days ' END
       || lpad((x.secs / 3600)::bigint::text, 2, '0') || ':'
       || lpad((x.secs % 3600 / 60)::bigint::text, 2, '0') || ':'
       || rtrim(to_char(x.secs % 60 + x.frac, 'FM00.999999'), '.')
  FROM (SELECT floor(e / 86400)::bigint AS days, (floor(e) % 86400)::bigint AS secs, e - floor(e) AS frac
          FROM (SELECT extract(epoch FROM d) AS e) t) x
$$;
COMMENT ON FUNCTION tide._hms(interval) IS
    'an interval as HH:MM:SS, with days before it when it has any (''2 days 03:00:00''): how reasons name time limits and timeouts';

-- R-T1: running jobs whose time limit has passed are stopped, their goal
-- fail, not retried (no_retry).  Rows another transaction holds (a
-- launcher's report in flight, a parallel group cycle) are skipped: the
-- next cycle sees them.  Returns how many it stopped.
CREATE FUNCTION tide._stop_at_limits() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ids bigint[];
    reasons text[];
    -- the clock, not the transaction's start; a value, so the index is used
    now_ timestamptz := pg_catalog.clock_timestamp();
BEGIN
    -- lock order: jobs (in id order), then their allocations (tide._evict)
    SELECT pg_catalog.array_agg(d.id ORDER BY d.id),
           pg_catalog.array_agg(pg_catalog.format('time limit %s reached', tide._hms(d.time_limit)) ORDER BY d.id)
      INTO ids, reasons
      FROM (SELECT j.id, j.time_limit FROM tide.jobs j
             WHERE j.state = 'running' AND j.time_limit IS NOT NULL
               AND tide._limit_at(j.started_at, j.time_limit) <= now_
             ORDER BY j.id
               FOR NO KEY UPDATE SKIP LOCKED) d;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    UPDATE tide.jobs j SET no_retry = true WHERE j.id = ANY (ids);
    RETURN pg_catalog.cardinality(tide._evict(ids, reasons,
                                              pg_catalog.array_fill('fail'::text, ARRAY[pg_catalog.cardinality(ids)])));
END
$$;
COMMENT ON FUNCTION tide._stop_at_limits() IS
    'the cycle''s time-limit step (R-T1): running jobs past started_at + time_limit are evicted with goal fail and reason "time limit HH:MM:SS reached", and not retried; returns how many';

-- R-T4: allocated jobs with a replica placed longer than timeout ago and
-- not started are released, all their allocations (the running replicas
-- too), through an eviction: back to pending, or failed once this was the
-- attempts-th time.  The nodes where replicas did not start are avoided
-- by the next placement (R-L4).  Returns how many jobs it released.
-- No statement probes allocations_assigned_idx once per job: right after
-- a cycle placed thousands of jobs the statistics still say that none is
-- assigned, and such a plan reads the whole index for every job (n x n:
-- minutes when a cycle's 17,000 placements time out together).
CREATE FUNCTION tide._stop_unstarted(timeout interval, attempts integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ids bigint[];
    reasons text[];
    goals text[];
    now_ timestamptz := pg_catalog.clock_timestamp();
BEGIN
    -- the due jobs, locked (jobs before allocations, in id order); when
    -- there are none, nothing is written (no statement, no trigger).  Their
    -- ids come first, from one range of the index, then the jobs by key
    -- (the state is checked once locked: as a condition it would let the
    -- plan scan jobs_active_idx and look each job up in the ids).
    SELECT pg_catalog.array_agg(d.id ORDER BY d.id) FILTER (WHERE d.state = 'allocated') INTO ids
      FROM (SELECT j.id, j.state FROM tide.jobs j
             WHERE j.id = ANY (ARRAY(SELECT DISTINCT a.job_id FROM tide.allocations a
                                      WHERE a.state = 'assigned' AND a.created_at <= now_ - timeout))
             ORDER BY j.id
               FOR NO KEY UPDATE SKIP LOCKED) d;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- Each job's nodes where replicas did not start, from its allocations
    -- read by job (every allocated job has some): the state is no
    -- condition of the scan, so that no plan probes allocations_assigned_idx
    -- once per job.
    WITH s AS MATERIALIZED (
        SELECT a.job_id,
               coalesce(pg_catalog.array_agg(DISTINCT a.node ORDER BY a.node) FILTER (WHERE a.state = 'assigned'),
                        '{}') AS nodes
          FROM tide.allocations a
         WHERE a.job_id = ANY (ids)
         GROUP BY a.job_id
    ), u AS (
        UPDATE tide.jobs j
           SET start_timeouts = j.start_timeouts + 1,
               no_retry = j.start_timeouts + 1 >= attempts,
               avoid_nodes = j.avoid_nodes || ARRAY(
                   SELECT x.node FROM unnest(s.nodes) AS x(node)
                    WHERE NOT x.node = ANY (j.avoid_nodes)
                    ORDER BY x.node)
          FROM s
         WHERE j.id = s.job_id
        RETURNING j.id, j.start_timeouts AS n
    )
    SELECT pg_catalog.array_agg(u.id ORDER BY u.id),
           pg_catalog.array_agg(CASE WHEN u.n >= attempts
               THEN pg_catalog.format('start timeout %s reached before all replicas were running, %s of %s times (tide.start_attempts)',
                                      tide._hms(timeout), u.n, attempts)
               ELSE pg_catalog.format('start timeout %s reached before all replicas were running (%s of %s)',
                                      tide._hms(timeout), u.n, attempts)
               END ORDER BY u.id),
           pg_catalog.array_agg(CASE WHEN u.n >= attempts THEN 'fail' ELSE 'requeue' END ORDER BY u.id)
      INTO ids, reasons, goals
      FROM u;
    RETURN pg_catalog.cardinality(tide._evict(ids, reasons, goals));
END
$$;
COMMENT ON FUNCTION tide._stop_unstarted(interval, integer) IS
    'the cycle''s start-timeout step (R-T4): allocated jobs with a replica assigned longer than timeout ago are evicted whole, back to pending (their nodes avoided), or failed and not retried at the attempts-th time; returns how many';

REVOKE ALL ON FUNCTION tide._limits_due(timestamptz, interval), tide._stop_at_limits(),
    tide._stop_unstarted(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._limits_due(timestamptz, interval), tide._stop_at_limits(),
    tide._stop_unstarted(interval, integer) TO tide_admin;
