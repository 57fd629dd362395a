-- A job's time limits as its queue sets them (docs/policy.md R-T1, the
-- queue part), and its warning and grace period (R-T2, R-T3): what every
-- submission path applies before the job is written.  tide.submit and
-- tide.submit_array call tide._job_time_limit from C (src/submit.c); a
-- plain INSERT (tide.submit_many, a multi-role job) gets it from the insert
-- trigger (23_job_checks.sql); an UPDATE of a job's limits from the trigger
-- below.  Enforcing the limit is the cycle's (63_run_limits.sql).

-- The time_limit a new job gets in its queue: its own, else the queue's
-- default_time_limit; refused above the queue's max_time_limit, or absent
-- when the queue has a maximum and no default.  warn_before needs a limit
-- to come before.  A retry keeps its job's limit (it was accepted once;
-- the queue may have changed since, and the retry is the same job).
CREATE FUNCTION tide._job_time_limit(queue text, time_limit interval, warn_before interval,
                                     grace_period interval, is_retry boolean DEFAULT false)
    RETURNS interval
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    q record;
    tl interval := time_limit;
BEGIN
    IF grace_period < interval '0' OR grace_period > interval '1 day' THEN
        RAISE EXCEPTION 'grace_period must be between 0 and 1 day, not %', grace_period
            USING ERRCODE = 'check_violation',
                  HINT = 'It is the time between SIGTERM and SIGKILL when the job is stopped; leave it NULL for the launcher''s --grace-period.';
    END IF;
    IF warn_before <= interval '0' OR warn_before > interval '100 years' THEN
        RAISE EXCEPTION 'warn_before must be positive and at most 100 years, not %', warn_before
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL for no warning.';
    END IF;
    IF NOT is_retry THEN
        SELECT x.default_time_limit, x.max_time_limit INTO q
          FROM tide.queues x WHERE x.name = _job_time_limit.queue;
        tl := coalesce(tl, q.default_time_limit);
        IF q.max_time_limit IS NOT NULL AND tl IS NULL THEN
            RAISE EXCEPTION 'queue "%" needs a time_limit of at most %', tide._cut(queue), q.max_time_limit
                USING ERRCODE = 'check_violation',
                      HINT = 'Give the job a time_limit, e.g. time_limit => ''1 hour''.';
        END IF;
        IF tl > q.max_time_limit THEN
            RAISE EXCEPTION 'time_limit % is above the maximum % of queue "%"', tl, q.max_time_limit, tide._cut(queue)
                USING ERRCODE = 'check_violation',
                      HINT = 'Give a shorter time_limit, or submit to a queue that allows it.';
        END IF;
    END IF;
    IF warn_before IS NOT NULL AND tl IS NULL THEN
        RAISE EXCEPTION 'warn_before % needs a time_limit to come before', warn_before
            USING ERRCODE = 'check_violation',
                  HINT = 'Give the job a time_limit, or leave warn_before NULL.';
    END IF;
    IF warn_before >= tl THEN
        RAISE EXCEPTION 'warn_before % is not shorter than the time_limit %', warn_before, tl
            USING ERRCODE = 'check_violation',
                  HINT = 'The warning comes that long before the limit, after the job started.';
    END IF;
    RETURN tl;
END
$$;
COMMENT ON FUNCTION tide._job_time_limit(text, interval, interval, interval, boolean) IS
    'the time_limit of a new job of a queue: its own or the queue''s default_time_limit, refused above max_time_limit or missing under one; checks warn_before (shorter than the limit) and grace_period (0 to 1 day); a retry keeps its own (R-T1..R-T3)';

-- An administrator's UPDATE of a job's limits is held to the same rules
-- as a submission, against the queue as it is now: a pending job may not
-- be given a limit its queue would refuse.  A job already past pending may
-- have its limit changed within the queue's maximum (the cycle stops it at
-- the new end, R-T1).
CREATE FUNCTION tide._jobs_limits_changed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    NEW.time_limit := tide._job_time_limit(NEW.queue, NEW.time_limit, NEW.warn_before, NEW.grace_period,
                                           NEW.retry_of IS NOT NULL AND NEW.time_limit IS NOT DISTINCT FROM OLD.time_limit);
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_limits_changed() IS
    'trigger: an UPDATE of time_limit, warn_before or grace_period is checked as a submission is (R-T1..R-T3)';
CREATE TRIGGER jobs_limits_changed BEFORE UPDATE OF time_limit, warn_before, grace_period ON tide.jobs
    FOR EACH ROW
    WHEN (OLD.time_limit IS DISTINCT FROM NEW.time_limit OR OLD.warn_before IS DISTINCT FROM NEW.warn_before
          OR OLD.grace_period IS DISTINCT FROM NEW.grace_period)
    EXECUTE FUNCTION tide._jobs_limits_changed();
