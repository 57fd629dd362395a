-- What a new job and its tasks must be (checked row by row at insert, by
-- functions that tide.submit calls first with its arguments), the tasks
-- frozen once the job left pending, and (deferred to commit) a job with
-- tasks and a reachable gang minimum.

-- tide.submit() (C, src/submit.c) inserts its own job, task and event
-- rows having checked them already: the triggers whose work it does itself
-- have WHEN (tide._writer() <> 'submit') and are not called for those rows.

-- May owner submit a job of these properties to queue?  The queue's limits
-- bind the submissions of non-administrators.  The job's owner decides, not
-- the current role, and a retry is no new submission: the state machine
-- inserts it on the owner's behalf and it keeps what its original was
-- allowed.  (an owner that is no role at all is no administrator and no
-- member)  Returns the queue's service_type, which a job without one takes.
-- tide.submit asks before it inserts, so that its errors do not come from
-- inside its INSERT; the insert trigger asks for every other job.
CREATE FUNCTION tide._admit_job(queue text, owner text, is_retry boolean, preemptable boolean,
                                service_type text, priority integer)
    RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    q record;
    limited boolean;
BEGIN
    -- (whether it has children in the same lookup: jobs live in leaf
    -- queues, 27b_queue_tree.sql)
    SELECT x.*, EXISTS (SELECT 1 FROM tide.queues c WHERE c.parent = x.name) AS inner_queue
      INTO q FROM tide.queues x WHERE x.name = _admit_job.queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', tide._cut(_admit_job.queue)
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Submit to one of the queues in tide.queues; an administrator creates queues.';
    END IF;
    IF q.inner_queue THEN
        RAISE EXCEPTION 'queue "%" has child queues: submit to one of them (%)', _admit_job.queue,
                        tide._child_queues(_admit_job.queue)
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Jobs live in leaf queues, the queues without children.';
    END IF;
    -- The limits bind neither retries nor administrators: whether the
    -- owner is one (a lookup in pg_roles) is asked only of a queue that has
    -- a limit, so a submission to an open queue does not pay for it.
    IF is_retry OR (q.submit_role IS NULL AND NOT q.preemptable_only AND NOT q.fixed_service_type
                    AND q.max_priority IS NULL) THEN
        RETURN q.service_type;
    END IF;
    limited := NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o
                            WHERE o.rolname = _admit_job.owner
                              AND pg_catalog.pg_has_role(o.oid, 'tide_admin', 'MEMBER'));
    IF limited AND q.submit_role IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o, pg_catalog.pg_roles r
                        WHERE o.rolname = _admit_job.owner AND r.rolname = q.submit_role
                          AND pg_catalog.pg_has_role(o.oid, r.oid, 'MEMBER')) THEN
        RAISE EXCEPTION 'role "%" may not submit to queue "%"', tide._cut(_admit_job.owner), tide._cut(_admit_job.queue)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = pg_catalog.format('Queue %s takes jobs of members of role %s (tide.queues.submit_role).',
                                           tide._cut(_admit_job.queue), tide._cut(q.submit_role));
    END IF;
    IF limited AND q.preemptable_only AND NOT _admit_job.preemptable THEN
        RAISE EXCEPTION 'queue "%" takes only preemptable jobs', tide._cut(_admit_job.queue)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Leave preemptable at true (tide.queues.preemptable_only), or ask an administrator.';
    END IF;
    IF limited AND q.fixed_service_type
       AND _admit_job.service_type IS DISTINCT FROM q.service_type AND _admit_job.service_type IS NOT NULL THEN
        RAISE EXCEPTION 'queue "%" takes only % jobs, not %', tide._cut(_admit_job.queue), q.service_type, tide._cut(_admit_job.service_type)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Leave service_type NULL to take the queue''s (tide.queues.fixed_service_type), or use a queue of that type.';
    END IF;
    -- A submitter's priority decides whom its job may preempt (R-E3): the
    -- queue caps it.
    IF limited AND q.max_priority IS NOT NULL AND _admit_job.priority > q.max_priority THEN
        RAISE EXCEPTION 'priority % is above the max_priority % of queue "%"', _admit_job.priority, q.max_priority, tide._cut(_admit_job.queue)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Submit at or below the queue''s max_priority, or ask an administrator to raise it.';
    END IF;
    RETURN q.service_type;
END
$$;
COMMENT ON FUNCTION tide._admit_job(text, text, boolean, boolean, text, integer) IS
    'may owner submit such a job to the queue (it exists and has no children; for non-administrators and not for retries: its submit_role, preemptable_only, fixed_service_type and max_priority); returns the queue''s service_type';

-- The values of a job's columns, each named with its limit.  tide.submit
-- checks its arguments with it before it inserts (so that no error names a
-- job id its rollback removed); the insert trigger checks every other new job.
CREATE FUNCTION tide._check_job_values(service_type text, on_evict text, min_available integer,
                                       max_retries integer, time_limit interval, gpu_type text,
                                       node_selector jsonb, name text)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ok boolean;
BEGIN
    IF service_type NOT IN ('training', 'inference') THEN
        RAISE EXCEPTION 'invalid service_type "%" for a job', tide._cut(service_type)
            USING ERRCODE = 'check_violation',
                  HINT = 'Use training or inference, or leave it NULL to take the queue''s.';
    END IF;
    IF on_evict IS NULL OR on_evict NOT IN ('requeue', 'fail') THEN
        RAISE EXCEPTION 'invalid on_evict "%" for a job', tide._cut(on_evict)
            USING ERRCODE = 'check_violation',
                  HINT = 'Use requeue (back to pending when evicted) or fail.';
    END IF;
    IF min_available < 1 THEN
        RAISE EXCEPTION 'min_available must be at least 1, not %', min_available
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL to require every replica.';
    END IF;
    IF max_retries < 0 THEN
        RAISE EXCEPTION 'max_retries must not be negative, not %', max_retries
            USING ERRCODE = 'check_violation';
    END IF;
    -- each retry enters the retry lane ahead of its queue (R-O3)
    IF max_retries > 100 THEN
        RAISE EXCEPTION 'max_retries must be at most 100, not %', max_retries
            USING ERRCODE = 'check_violation',
                  HINT = 'A job is retried at most 100 times; 0 (the default) means no retry.';
    END IF;
    IF time_limit <= interval '0' THEN
        RAISE EXCEPTION 'time_limit must be positive, not %', time_limit
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL for no limit.';
    END IF;
    IF time_limit > interval '100 years' THEN
        RAISE EXCEPTION 'time_limit must be at most 100 years, not %', time_limit
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL for no limit.';
    END IF;
    ok := tide._check_name('gpu_type', gpu_type);
    -- a job's name is free text (NULL: none), as long as any other name
    ok := tide._check_name('job name', name);
    IF pg_catalog.jsonb_typeof(node_selector) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'node_selector must be a JSON object, not %', coalesce(pg_catalog.jsonb_typeof(node_selector), 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'Give the labels a node must have, e.g. ''{"zone": "a"}''; ''{}'' selects any node.';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_job_values(text, text, integer, integer, interval, text, jsonb, text) IS
    'refuses job column values out of their range (service_type, on_evict, min_available, max_retries 0 to 100, time_limit up to 100 years, gpu_type, node_selector an object, a name of 1 to tide._name_max() characters), naming the column, the value (cut to a readable length) and the limit';

CREATE FUNCTION tide._jobs_before_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    queue_type text;
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    -- NULL means the default (docs/policy.md): a submission column given as
    -- NULL takes its column default, as tide.submit does with its arguments
    NEW.priority := coalesce(NEW.priority, 0);
    NEW.idle := coalesce(NEW.idle, false);
    NEW.reserve := coalesce(NEW.reserve, false);
    NEW.preemptable := coalesce(NEW.preemptable, true);
    NEW.node_selector := coalesce(NEW.node_selector, '{}');
    NEW.max_retries := coalesce(NEW.max_retries, 0);
    NEW.on_evict := coalesce(NEW.on_evict, 'requeue');
    NEW.held := coalesce(NEW.held, false);
    NEW.env := coalesce(NEW.env, '{}');
    NEW.labels := coalesce(NEW.labels, '{}');
    queue_type := tide._admit_job(NEW.queue, NEW.owner, NEW.retry_of IS NOT NULL, NEW.preemptable,
                                  NEW.service_type, NEW.priority);
    -- with a snapshot older than a concurrent deletion of the queue, lock
    -- its row as a foreign key would (27_queue_checks.sql)
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        PERFORM FROM tide.queues q WHERE q.name = NEW.queue FOR KEY SHARE;
    END IF;
    ok := tide._check_job_values(NEW.service_type, NEW.on_evict, NEW.min_available, NEW.max_retries,
                                 NEW.time_limit, NEW.gpu_type, NEW.node_selector, NEW.name);
    ok := tide._check_payload(NEW.env, NEW.workdir, NEW.labels);
    -- the queue's default and maximum time limit (31_job_limits.sql, R-T1)
    NEW.time_limit := tide._job_time_limit(NEW.queue, NEW.time_limit, NEW.warn_before, NEW.grace_period,
                                           NEW.retry_of IS NOT NULL);
    NEW.service_type := coalesce(NEW.service_type, queue_type);
    IF NEW.state IS DISTINCT FROM 'pending' THEN
        RAISE EXCEPTION 'a new job must be pending, not "%"', tide._cut(NEW.state)
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave state to its default; jobs change state as tide.job_transitions allows.';
    END IF;
    NEW.cancel_requested := false;
    NEW.evict_goal := NULL;
    NEW.state_reason := coalesce(NEW.state_reason, 'submitted');
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_before_insert() IS
    'trigger: gives the submission columns given as NULL their defaults, checks a new job (queue exists; for non-administrators: the queue''s submit_role, max_priority, preemptable_only and fixed_service_type; valid service_type, on_evict, state pending) and takes the queue''s service_type when none is given';
CREATE TRIGGER jobs_before_insert BEFORE INSERT ON tide.jobs
    FOR EACH ROW WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._jobs_before_insert();

-- The values of a task row.  job_id NULL: tide.submit's task, checked
-- before its job exists (the messages then name no job).
CREATE FUNCTION tide._check_task_values(job_id bigint, role text, replicas integer, request tide.resvec)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    task text := pg_catalog.format('task "%s"', tide._cut(role)) || coalesce(' of job ' || job_id, '');
    gpu numeric;
    ok boolean;
BEGIN
    ok := tide._check_name(CASE WHEN job_id IS NULL THEN 'role' ELSE 'role of a task of job ' || job_id END, role);
    IF replicas IS NULL OR replicas < 1 THEN
        RAISE EXCEPTION '% has % replicas', task, coalesce(replicas::text, 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'A task role needs at least one replica.';
    END IF;
    -- the cycle sizes its arrays by them (and tide._check_job_tasks counts
    -- the job's roles together)
    IF replicas > 10000 THEN
        RAISE EXCEPTION '% has % replicas, more than 10000', task, replicas
            USING ERRCODE = 'check_violation',
                  HINT = 'A job has at most 10000 replicas across its task roles; split larger work into several jobs.';
    END IF;
    IF request IS NULL THEN
        RAISE EXCEPTION '% has no request', task
            USING ERRCODE = 'not_null_violation',
                  HINT = 'Give a per-replica resource vector such as ''cpu=4, memory=16Gi, gpu=1''.';
    END IF;
    IF request OPERATOR(tide.=) ''::tide.resvec THEN
        -- a request of nothing would fit anywhere, any number of times
        RAISE EXCEPTION '% requests no resources', task
            USING ERRCODE = 'check_violation',
                  HINT = 'Give a per-replica resource vector such as ''cpu=4, memory=16Gi, gpu=1''.';
    END IF;
    -- a scheduling cycle tells apart at most 64 resource names in all (the
    -- engine's TIDE_MAX_RES): a request naming more could never be placed
    IF pg_catalog.cardinality(tide.resvec_names(request)) > 64 THEN
        RAISE EXCEPTION '% names % resources, more than 64', task,
                        pg_catalog.cardinality(tide.resvec_names(request))
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'A cluster offers at most 64 distinct resource names (card types included), so no node could hold this request.';
    END IF;
    gpu := tide.get(request, 'gpu');
    IF gpu > 1 AND gpu <> trunc(gpu) THEN
        RAISE EXCEPTION 'GPU request % of % is not a whole number', gpu, task
            USING ERRCODE = 'check_violation',
                  HINT = 'A request above one GPU must be whole (gpu=2); below one it may be a share of one GPU (gpu=0.5 or gpu=250m).';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_task_values(bigint, text, integer, tide.resvec) IS
    'refuses task values out of their range (a role name, 1 to 10000 replicas, a non-empty request of at most 64 resource names, a GPU request whole above one GPU), naming the task';

-- With the caller's rights: a job the caller may not see (row-level
-- security) is to it as a job that does not exist, so that task writes
-- tell nobody whether another owner's job exists or what state it is in.
-- (locking the row FOR SHARE needs UPDATE on some column of tide.jobs:
-- submitters have cancel_requested)
CREATE FUNCTION tide._job_tasks_before_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job_state text;
    jid bigint;
    total bigint;
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    -- Tasks are frozen once a job has left pending: the cycle placed them.
    -- The job row FOR SHARE: a cycle that holds it (its UPDATE is placing
    -- the job or rewriting its reason) keeps the tasks from changing under
    -- it.  SKIP LOCKED, then an error: a task writer never waits for a
    -- cycle, so several task writes in one statement cannot deadlock with
    -- it (and no exception block: a subtransaction per task row would not
    -- scale to bulk inserts).
    -- A job row this transaction wrote (tide.submit's own job) is seen by
    -- no other transaction, so no cycle or cancel can hold it: no lock (a
    -- tuple lock costs a WAL record).  (xmin: the top transaction's id; a
    -- job written in a subtransaction takes the general way.)
    jid := CASE TG_OP WHEN 'DELETE' THEN OLD.job_id ELSE NEW.job_id END;
    SELECT j.state INTO job_state FROM tide.jobs j
     WHERE j.id = jid
       AND j.xmin = pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text::pg_catalog.xid;
    IF NOT FOUND THEN
        SELECT j.state INTO job_state FROM tide.jobs j WHERE j.id = jid FOR SHARE SKIP LOCKED;
    END IF;
    IF NOT FOUND THEN
        -- held by another transaction (or gone): only a pending job is worth a retry
        SELECT j.state INTO job_state FROM tide.jobs j WHERE j.id = jid;
        IF FOUND AND job_state = 'pending' THEN
            RAISE EXCEPTION 'tasks of job % cannot change right now: another transaction holds the job (a scheduling cycle, a cancel)', jid
                USING ERRCODE = 'lock_not_available',
                      HINT = 'Retry in a moment. Tasks inserted in the transaction that inserts their job never meet this.';
        END IF;
    END IF;
    IF FOUND AND job_state <> 'pending' THEN
        RAISE EXCEPTION 'tasks of job % cannot change: the job is %',
                CASE TG_OP WHEN 'DELETE' THEN OLD.job_id ELSE NEW.job_id END, job_state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Only a pending job''s tasks may change; cancel it and submit a new one.';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    -- NULL means the default (docs/policy.md), as for tide.submit's arguments
    IF TG_OP = 'INSERT' THEN
        NEW.role := coalesce(NEW.role, 'main');
        NEW.replicas := coalesce(NEW.replicas, 1);
    END IF;
    ok := tide._check_task_values(NEW.job_id, NEW.role, NEW.replicas, NEW.request);
    -- A new task can only add to its job's tasks and replicas: of the
    -- deferred checks (tide._check_job_tasks) only the cap can fail, and it
    -- is checked here, so that an insert queues no deferred check of its
    -- own (a new job's check counts its tasks at commit).  The other roles
    -- (one of the same role is this row's conflict, not an addition).
    IF TG_OP = 'INSERT' THEN
        SELECT coalesce(sum(t.replicas), 0) + NEW.replicas INTO total
          FROM tide.job_tasks t WHERE t.job_id = NEW.job_id AND t.role <> NEW.role;
        IF total > 10000 THEN
            RAISE EXCEPTION 'job % has % replicas, more than 10000', NEW.job_id, total
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'A job has at most 10000 replicas across its task roles; split larger work into several jobs.';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._job_tasks_before_write() IS
    'trigger: gives a new task row''s NULL role and replicas their defaults (main, 1), checks it (at least one replica, a non-empty request, GPU request whole above one GPU, a new one not taking its job above 10000 replicas) and freezes the tasks of jobs that left pending; runs with the caller''s rights, so a job it may not see is as one that does not exist';
CREATE TRIGGER job_tasks_before_write BEFORE INSERT OR UPDATE OR DELETE ON tide.job_tasks
    FOR EACH ROW WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._job_tasks_before_write();

CREATE FUNCTION tide._job_tasks_after_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    DELETE FROM tide.allocations a USING old_tasks o
     WHERE a.job_id = o.job_id AND a.role = o.role;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._job_tasks_after_delete() IS
    'statement trigger: deleted tasks (and so deleted jobs) take their allocation rows with them, as a cascading foreign key would';
CREATE TRIGGER job_tasks_after_delete AFTER DELETE ON tide.job_tasks
    REFERENCING OLD TABLE AS old_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION tide._job_tasks_after_delete();

-- Deferred: a job and its tasks may be inserted in any order within one
-- transaction; at commit every job has tasks and a reachable gang minimum.
-- Checked for a new job, a changed min_available and changed or deleted
-- tasks; a new task is checked by tide._job_tasks_before_write (it cannot
-- take anything below its minimum).
CREATE FUNCTION tide._check_job_tasks() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    jid bigint;
    minimum integer;
    ntasks bigint;
    total bigint;
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'jobs' THEN
        jid := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        jid := OLD.job_id;
    ELSE
        jid := NEW.job_id;
    END IF;
    -- one statement: the job and the sum of its tasks
    SELECT j.min_available, count(t.job_id), coalesce(sum(t.replicas), 0) INTO minimum, ntasks, total
      FROM tide.jobs j LEFT JOIN tide.job_tasks t ON t.job_id = j.id
     WHERE j.id = jid
     GROUP BY j.id;
    IF NOT FOUND THEN
        RETURN NULL;            -- the job itself was deleted
    END IF;
    IF ntasks = 0 THEN
        RAISE EXCEPTION 'job % has no tasks', jid
            USING ERRCODE = 'check_violation',
                  HINT = 'Insert its rows into tide.job_tasks in the same transaction, or submit with tide.submit().';
    END IF;
    IF total > 10000 THEN
        RAISE EXCEPTION 'job % has % replicas, more than 10000', jid, total
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'A job has at most 10000 replicas across its task roles; split larger work into several jobs.';
    END IF;
    IF minimum > total THEN
        RAISE EXCEPTION 'min_available % of job % is above its % replicas', minimum, jid, total
            USING ERRCODE = 'check_violation',
                  HINT = 'min_available counts replicas across all task roles; leave it NULL to require all of them.';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._check_job_tasks() IS
    'deferred constraint trigger: at commit a job has at least one task, at most 10000 replicas, and min_available does not exceed them';
-- (tide.submit's job has its one task, checked before it was written: its
-- insert queues no check)
CREATE CONSTRAINT TRIGGER jobs_have_tasks AFTER INSERT OR UPDATE OF min_available ON tide.jobs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._check_job_tasks();
CREATE CONSTRAINT TRIGGER job_tasks_consistent AFTER UPDATE OR DELETE ON tide.job_tasks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tide._check_job_tasks();
