-- What a queue row must be, checked before the table's own constraints so
-- that a bad value is refused naming the queue, the column, the value and
-- the limit (a constraint would name itself and print the whole row).

CREATE FUNCTION tide._queues_before_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    q text := pg_catalog.format('queue "%s"', tide._cut(NEW.name));
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    ok := tide._check_name('queue name', NEW.name);
    ok := tide._check_name('resource_group of ' || q, NEW.resource_group);
    IF NEW.submit_role IS NOT NULL THEN
        ok := tide._check_name('submit_role of ' || q, NEW.submit_role);
    END IF;
    ok := tide._check_choice('preemption_within of ' || q, NEW.preemption_within, '{never,lower_priority}',
                             'lower_priority lets its jobs evict lower-priority preemptable jobs of the same queue.');
    ok := tide._check_choice('service_type of ' || q, NEW.service_type, '{training,inference}',
                             'It is the default service_type of the jobs submitted to the queue.');
    ok := tide._check_choice('placement of ' || q, NEW.placement, '{pack,spread,frag}',
                             'pack fills the fullest node first; spread the emptiest; frag the node where the typical workload''s GPU fragmentation grows least.');
    IF NEW.min_runtime < interval '0' OR NEW.min_runtime > interval '100 years' THEN
        RAISE EXCEPTION 'min_runtime of % must be between 0 and 100 years, not %', q, NEW.min_runtime
            USING ERRCODE = 'check_violation',
                  HINT = 'It is how long a started job is safe from preemption and reclaim; 0 (the default) for no such time.';
    END IF;
    -- R-A4 (the column is added by 28b_owner_limits.sql): a limit names at
    -- least one resource, else it would read as "no limit" next to NULL
    -- (tide.resvec refuses a negative amount and drops a zero one)
    IF NEW.owner_capability IS NOT NULL AND NEW.owner_capability::jsonb = '{}'::jsonb THEN
        RAISE EXCEPTION 'owner_capability of % names no resource', q
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name what one owner may hold, above 0, e.g. ''gpu=8''; NULL means no owner limit.';
    END IF;
    -- owner limits and owner order are a leaf's (R-A3, R-O7; children are
    -- added by 27b_queue_tree.sql, owner_fair_share by 65b_owner_fair.sql)
    IF NEW.owner_capability IS NOT NULL
       AND (TG_OP = 'INSERT' OR OLD.owner_capability IS NULL)
       AND EXISTS (SELECT 1 FROM tide.queues c WHERE c.parent = NEW.name) THEN
        RAISE EXCEPTION 'owner_capability of % cannot be set: the queue has child queues', q
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Owner limits are kept in leaf queues, where the jobs are: set it on its children.';
    END IF;
    IF NEW.owner_fair_share AND (TG_OP = 'INSERT' OR NOT OLD.owner_fair_share)
       AND EXISTS (SELECT 1 FROM tide.queues c WHERE c.parent = NEW.name) THEN
        RAISE EXCEPTION 'owner_fair_share of % cannot be set: the queue has child queues', q
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Owners are ordered within a leaf queue, where the jobs are: set it on its children.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._queues_before_write() IS
    'trigger: checks a new or changed queue''s values (names, preemption_within, service_type, placement, min_runtime, owner_capability), naming the queue, the column and the limit';
CREATE TRIGGER queues_before_check BEFORE INSERT OR UPDATE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queues_before_write();

-- A job's queue is a queue: what a foreign key from tide.jobs to
-- tide.queues would keep, kept by triggers instead.  A key's check locks
-- the queue's row FOR KEY SHARE on every submission, and with concurrent
-- submitters to one queue each of those locks makes a new MultiXact on that
-- one row (docs/benchmarks.md, "Submit throughput").  Here a submission in
-- READ COMMITTED takes no lock of its own: tide._admit_job refuses an
-- unknown queue (with a snapshot taken after the submission got its lock
-- on tide.jobs), and a queue is deleted, renamed or truncated only under a
-- SHARE lock on tide.jobs, which waits for every transaction writing jobs
-- (their ROW EXCLUSIVE lock) and holds new ones off until it ends: the
-- check for jobs then sees them all.  Under REPEATABLE READ or SERIALIZABLE
-- a snapshot may predate the other side's commit: there a submission locks
-- its queue's row as the key did (tide._jobs_before_insert), and a queue is
-- not deleted or renamed at all.
CREATE FUNCTION tide._queues_keep_jobs() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    what text := CASE TG_OP WHEN 'DELETE' THEN 'deleted' WHEN 'UPDATE' THEN 'renamed' ELSE 'truncated' END;
    queue text := CASE WHEN TG_LEVEL = 'ROW' THEN pg_catalog.format('queue "%s"', tide._cut(OLD.name)) ELSE 'tide.queues' END;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION '% can be % only in a READ COMMITTED transaction', queue, what
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Its jobs are looked for with a snapshot taken once concurrent submitters have ended, which this isolation level does not take.';
    END IF;
    LOCK TABLE tide.jobs IN SHARE MODE;
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM tide.jobs j WHERE j.queue = OLD.name) THEN
        RAISE EXCEPTION 'queue "%" has jobs', tide._cut(OLD.name)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Delete its jobs first (tide.jobs), or keep the queue.';
    END IF;
    IF TG_OP = 'TRUNCATE' AND EXISTS (SELECT 1 FROM tide.jobs) THEN
        RAISE EXCEPTION 'tide.queues cannot be truncated while there are jobs'
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Delete the jobs first (tide.jobs).';
    END IF;
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD WHEN 'UPDATE' THEN NEW END;   -- (NULL after TRUNCATE)
END
$$;
COMMENT ON FUNCTION tide._queues_keep_jobs() IS
    'trigger: a queue that has jobs is not deleted (nor tide.queues truncated); before a queue is deleted or renamed, waits for every transaction writing jobs and holds new ones off (READ COMMITTED only)';
CREATE TRIGGER queues_keep_jobs BEFORE DELETE ON tide.queues
    FOR EACH ROW EXECUTE FUNCTION tide._queues_keep_jobs();
CREATE TRIGGER queues_keep_jobs_rename BEFORE UPDATE OF name ON tide.queues
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION tide._queues_keep_jobs();
-- after: TRUNCATE tide.jobs, tide.queues empties both before it looks
CREATE TRIGGER queues_keep_jobs_truncate AFTER TRUNCATE ON tide.queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._queues_keep_jobs();

-- A renamed queue keeps its jobs (what ON UPDATE CASCADE did).
CREATE FUNCTION tide._queues_renamed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    UPDATE tide.jobs j SET queue = NEW.name WHERE j.queue = OLD.name;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._queues_renamed() IS
    'trigger: a renamed queue''s jobs take its new name';
CREATE TRIGGER queues_renamed AFTER UPDATE OF name ON tide.queues
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION tide._queues_renamed();

-- An administrator moving jobs to another queue: it exists.
CREATE FUNCTION tide._jobs_queue_exists() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        PERFORM FROM tide.queues q WHERE q.name = NEW.queue FOR KEY SHARE;
    ELSE
        PERFORM FROM tide.queues q WHERE q.name = NEW.queue;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', tide._cut(NEW.queue)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Move jobs to one of the queues in tide.queues.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_queue_exists() IS
    'trigger: a job moved to another queue (an UPDATE of tide.jobs.queue) names an existing queue';
CREATE TRIGGER jobs_queue_exists BEFORE UPDATE OF queue ON tide.jobs
    FOR EACH ROW WHEN (OLD.queue IS DISTINCT FROM NEW.queue)
    EXECUTE FUNCTION tide._jobs_queue_exists();
