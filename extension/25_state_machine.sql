-- The job and allocation state machines: the one place that owns them.
--
-- Every writer (tide.cancel, the launcher calls, the scheduling cycle, an
-- administrator's UPDATE) changes states with plain set-based statements on
-- tide.jobs and tide.allocations.  Statement-level AFTER triggers with
-- transition tables check every (old, new) pair against the tables below and
-- append the history in one INSERT ... SELECT; no per-row code runs on the
-- cycle's hot path.  The protocol is in docs/lifecycle.md.

-- ---------------------------------------------------------------- constants
CREATE FUNCTION tide._cycle_lock_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 8388346165908733953::bigint $$;   -- 'tide' << 32 | 1
COMMENT ON FUNCTION tide._cycle_lock_key() IS
    'advisory lock key of the scheduling cycle: a cycle runs only under pg_try_advisory_xact_lock(tide._cycle_lock_key()) (R-C1)';

CREATE FUNCTION tide._current_cycle() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT NULLIF(pg_catalog.current_setting('tide.cycle_id', true), '')::bigint $$;
COMMENT ON FUNCTION tide._current_cycle() IS
    'the cycle making the current changes: the transaction-local setting tide.cycle_id (set_config(''tide.cycle_id'', id::text, true)), or NULL';

-- pg_dump and pg_restore scripts begin with SET row_security = off, and a
-- role subject to row-level security cannot insert with it off: so an
-- insert with row_security off is a restore (or a superuser who asked for
-- the same), and the rows go in as they were dumped: no insert checks, no
-- new history rows, no notifications.
CREATE FUNCTION tide._restoring() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT pg_catalog.current_setting('row_security') = 'off' $$;
COMMENT ON FUNCTION tide._restoring() IS
    'true while rows are being restored from a dump (row_security is off): insert triggers then keep the rows as they were';

-- A gpumask of GPUs 0 .. n-1.  No SET clause, so that the planner inlines
-- it (the allocation trigger calls it once per node); every name in it is
-- qualified instead.  Not STRICT and only immutable parts (int4 to text,
-- not text || int4) for the same reason; NULL gives NULL anyway.
CREATE FUNCTION tide._all_gpus(n numeric) RETURNS tide.gpumask
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
SELECT CASE WHEN n OPERATOR(pg_catalog.<) 1 THEN ''::tide.gpumask
            ELSE ('0-' OPERATOR(pg_catalog.||) (n::pg_catalog.int4 OPERATOR(pg_catalog.-) 1)::pg_catalog.text)::tide.gpumask END
$$;
COMMENT ON FUNCTION tide._all_gpus(numeric) IS 'the mask of every GPU of a node with n GPUs (indices 0 to n-1)';

-- ---------------------------------------------------------------- transitions
CREATE TABLE tide.job_transitions (
    old_state   text NOT NULL,
    new_state   text NOT NULL,
    made_by     text NOT NULL,
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT job_transitions_states_check CHECK (
        old_state IN ('pending', 'allocated', 'running', 'evicting', 'succeeded', 'failed', 'cancelled')
        AND new_state IN ('pending', 'allocated', 'running', 'evicting', 'succeeded', 'failed', 'cancelled')
        AND old_state <> new_state)
);
COMMENT ON TABLE tide.job_transitions IS
    'The allowed job state changes; any other change of tide.jobs.state is refused. A new job starts pending.';
INSERT INTO tide.job_transitions VALUES
    ('pending',   'allocated', 'a cycle placed the job (its allocations are assigned)'),
    ('pending',   'cancelled', 'cancel of a pending job'),
    ('allocated', 'running',   'the last assigned allocation started'),
    ('allocated', 'evicting',  'eviction (preempt, reclaim, cancel, lost node) before every replica started'),
    ('allocated', 'succeeded', 'every allocation exited 0'),
    ('allocated', 'failed',    'an allocation exited non-zero'),
    ('running',   'evicting',  'eviction (preempt, reclaim, cancel, lost node)'),
    ('running',   'succeeded', 'every allocation exited 0'),
    ('running',   'failed',    'an allocation exited non-zero'),
    ('allocated', 'pending',   'the cycle gave up its placement: the job''s tasks changed while it placed it (no allocation was made); only tide.run_cycle() makes it'),
    ('evicting',  'pending',   'eviction done, goal requeue'),
    ('evicting',  'failed',    'eviction done, goal fail'),
    ('evicting',  'cancelled', 'eviction done, goal cancel');

CREATE TABLE tide.allocation_transitions (
    old_state   text NOT NULL,
    new_state   text NOT NULL,
    made_by     text NOT NULL,
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT allocation_transitions_states_check CHECK (
        old_state IN ('assigned', 'running', 'releasing', 'released')
        AND new_state IN ('assigned', 'running', 'releasing', 'released')
        AND old_state <> new_state)
);
COMMENT ON TABLE tide.allocation_transitions IS
    'The allowed allocation state changes; released is final (an allocation is released exactly once). A new allocation is assigned.';
INSERT INTO tide.allocation_transitions VALUES
    ('assigned',  'running',   'tide.started'),
    ('assigned',  'releasing', 'eviction: the launcher must confirm with tide.evicted'),
    ('assigned',  'released',  'tide.exited before start, or a lost node'),
    ('running',   'releasing', 'eviction: the launcher must confirm with tide.evicted'),
    ('running',   'released',  'tide.exited, or a lost node'),
    ('releasing', 'released',  'tide.evicted or tide.exited');

-- ---------------------------------------------------------------- insert checks
CREATE FUNCTION tide._jobs_before_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    q tide.queues;
    admin boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    SELECT * INTO q FROM tide.queues x WHERE x.name = NEW.queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', NEW.queue
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Submit to one of the queues in tide.queues; an administrator creates queues.';
    END IF;
    -- The job's owner, not the current role: retries are inserted by the
    -- state machine on the owner's behalf and keep what it was allowed.
    -- (an owner that is no role at all is no administrator and no member)
    admin := EXISTS (SELECT 1 FROM pg_catalog.pg_roles o
                      WHERE o.rolname = NEW.owner
                        AND pg_catalog.pg_has_role(o.oid, 'tide_admin', 'MEMBER'));
    IF q.submit_role IS NOT NULL AND NOT admin AND NEW.retry_of IS NULL
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o, pg_catalog.pg_roles r
                        WHERE o.rolname = NEW.owner AND r.rolname = q.submit_role
                          AND pg_catalog.pg_has_role(o.oid, r.oid, 'MEMBER')) THEN
        RAISE EXCEPTION 'role "%" may not submit to queue "%"', NEW.owner, NEW.queue
            USING ERRCODE = 'insufficient_privilege',
                  HINT = pg_catalog.format('Queue %s takes jobs of members of role %s (tide.queues.submit_role).', NEW.queue, q.submit_role);
    END IF;
    IF q.preemptable_only AND NOT NEW.preemptable AND NOT admin AND NEW.retry_of IS NULL THEN
        RAISE EXCEPTION 'queue "%" takes only preemptable jobs', NEW.queue
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Leave preemptable at true (tide.queues.preemptable_only), or ask an administrator.';
    END IF;
    IF q.fixed_service_type AND NEW.service_type IS DISTINCT FROM q.service_type AND NEW.service_type IS NOT NULL
       AND NOT admin AND NEW.retry_of IS NULL THEN
        RAISE EXCEPTION 'queue "%" takes only % jobs, not %', NEW.queue, q.service_type, NEW.service_type
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Leave service_type NULL to take the queue''s (tide.queues.fixed_service_type), or use a queue of that type.';
    END IF;
    -- A submitter's priority decides whom its job may preempt (R-E3): the
    -- queue caps it.  Administrators may go above; a retry keeps the
    -- priority its original was admitted with.
    IF q.max_priority IS NOT NULL AND NEW.priority > q.max_priority AND NEW.retry_of IS NULL AND NOT admin THEN
        RAISE EXCEPTION 'priority % is above the max_priority % of queue "%"', NEW.priority, q.max_priority, NEW.queue
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Submit at or below the queue''s max_priority, or ask an administrator to raise it.';
    END IF;
    IF NEW.service_type IS NULL THEN
        NEW.service_type := q.service_type;
    ELSIF NEW.service_type NOT IN ('training', 'inference') THEN
        RAISE EXCEPTION 'invalid service_type "%" for a job', NEW.service_type
            USING ERRCODE = 'check_violation',
                  HINT = 'Use training or inference, or leave it NULL to take the queue''s.';
    END IF;
    IF NEW.on_evict IS NULL OR NEW.on_evict NOT IN ('requeue', 'fail') THEN
        RAISE EXCEPTION 'invalid on_evict "%" for a job', NEW.on_evict
            USING ERRCODE = 'check_violation',
                  HINT = 'Use requeue (back to pending when evicted) or fail.';
    END IF;
    IF NEW.state IS DISTINCT FROM 'pending' THEN
        RAISE EXCEPTION 'a new job must be pending, not "%"', NEW.state
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave state to its default; jobs change state as tide.job_transitions allows.';
    END IF;
    IF NEW.min_available IS NOT NULL AND NEW.min_available < 1 THEN
        RAISE EXCEPTION 'min_available must be at least 1, not %', NEW.min_available
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL to require every replica.';
    END IF;
    IF NEW.max_retries IS NOT NULL AND NEW.max_retries < 0 THEN
        RAISE EXCEPTION 'max_retries must not be negative, not %', NEW.max_retries
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.time_limit IS NOT NULL AND NEW.time_limit <= interval '0' THEN
        RAISE EXCEPTION 'time_limit must be positive, not %', NEW.time_limit
            USING ERRCODE = 'check_violation',
                  HINT = 'Leave it NULL for no limit.';
    END IF;
    NEW.cancel_requested := false;
    NEW.evict_goal := NULL;
    NEW.state_reason := coalesce(NEW.state_reason, 'submitted');
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_before_insert() IS
    'trigger: checks a new job (queue exists; for non-administrators: the queue''s submit_role, max_priority, preemptable_only and fixed_service_type; valid service_type, on_evict, state pending) and takes the queue''s service_type when none is given';
CREATE TRIGGER jobs_before_insert BEFORE INSERT ON tide.jobs
    FOR EACH ROW EXECUTE FUNCTION tide._jobs_before_insert();

CREATE FUNCTION tide._job_tasks_before_write() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job_state text;
    gpu numeric;
    jid bigint;
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
    jid := CASE TG_OP WHEN 'DELETE' THEN OLD.job_id ELSE NEW.job_id END;
    SELECT j.state INTO job_state FROM tide.jobs j WHERE j.id = jid FOR SHARE SKIP LOCKED;
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
    IF NEW.replicas IS NULL OR NEW.replicas < 1 THEN
        RAISE EXCEPTION 'task "%" of job % has % replicas', NEW.role, NEW.job_id, coalesce(NEW.replicas::text, 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'A task role needs at least one replica.';
    END IF;
    IF NEW.request IS NULL THEN
        RAISE EXCEPTION 'task "%" of job % has no request', NEW.role, NEW.job_id
            USING ERRCODE = 'not_null_violation',
                  HINT = 'Give a per-replica resource vector such as ''cpu=4, memory=16Gi, gpu=1''.';
    END IF;
    IF NEW.request OPERATOR(tide.=) ''::tide.resvec THEN
        -- a request of nothing would fit anywhere, any number of times
        RAISE EXCEPTION 'task "%" of job % requests no resources', NEW.role, NEW.job_id
            USING ERRCODE = 'check_violation',
                  HINT = 'Give a per-replica resource vector such as ''cpu=4, memory=16Gi, gpu=1''.';
    END IF;
    gpu := tide.get(NEW.request, 'gpu');
    IF gpu > 1 AND gpu <> trunc(gpu) THEN
        RAISE EXCEPTION 'GPU request % of task "%" of job % is not a whole number', gpu, NEW.role, NEW.job_id
            USING ERRCODE = 'check_violation',
                  HINT = 'A request above one GPU must be whole (gpu=2); below one it may be a share of one GPU (gpu=0.5 or gpu=250m).';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._job_tasks_before_write() IS
    'trigger: checks a task row (at least one replica, a non-empty request, GPU request whole above one GPU) and freezes the tasks of jobs that left pending';
CREATE TRIGGER job_tasks_before_write BEFORE INSERT OR UPDATE OR DELETE ON tide.job_tasks
    FOR EACH ROW EXECUTE FUNCTION tide._job_tasks_before_write();

-- Deferred: a job and its tasks may be inserted in any order within one
-- transaction; at commit every job has tasks and a reachable gang minimum.
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
    SELECT j.min_available INTO minimum FROM tide.jobs j WHERE j.id = jid;
    IF NOT FOUND THEN
        RETURN NULL;            -- the job itself was deleted
    END IF;
    SELECT count(*), coalesce(sum(t.replicas), 0) INTO ntasks, total
      FROM tide.job_tasks t WHERE t.job_id = jid;
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
CREATE CONSTRAINT TRIGGER jobs_have_tasks AFTER INSERT OR UPDATE OF min_available ON tide.jobs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tide._check_job_tasks();
CREATE CONSTRAINT TRIGGER job_tasks_consistent AFTER INSERT OR UPDATE OR DELETE ON tide.job_tasks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tide._check_job_tasks();

-- ---------------------------------------------------------------- job history
CREATE FUNCTION tide._jobs_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
    SELECT n.id, NULL, n.state, n.state_reason, tide._current_cycle()
      FROM new_jobs n
     ORDER BY n.id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_insert() IS
    'statement trigger: logs the submission of every new job in tide.job_events (old_state NULL)';
CREATE TRIGGER jobs_after_insert AFTER INSERT ON tide.jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_after_insert();

CREATE FUNCTION tide._jobs_after_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    -- One join of the transition tables (a cycle's update holds every job
    -- whose reason it rewrote too): state changes are logged, then checked
    -- against tide.job_transitions (a bad one aborts the whole statement,
    -- its log rows with it), and new cancel requests collected.  Dynamic
    -- SQL so that the plan fits this statement's transition tables (a
    -- cached plan made for one row would join thousands by nested loop).
    EXECUTE $q$
        WITH changed AS MATERIALIZED (
            SELECT n.id, o.state AS old_state, n.state AS new_state, n.state_reason,
                   n.cancel_requested AND NOT o.cancel_requested AS cancel
              FROM old_jobs o JOIN new_jobs n ON n.id = o.id
             WHERE o.state <> n.state OR (n.cancel_requested AND NOT o.cancel_requested)),
        logged AS (
            INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
            SELECT c.id, c.old_state, c.new_state, c.state_reason, $1
              FROM changed c
             WHERE c.old_state <> c.new_state
             ORDER BY c.id
            RETURNING job_id, old_state, new_state)
        SELECT b.job_id AS bad_id, b.old_state, b.new_state,
               (SELECT pg_catalog.array_agg(c.id ORDER BY c.id) FROM changed c WHERE c.cancel) AS cancels,
               -- a pending job holds nothing: it may not become pending
               -- while an allocation of it is live
               (SELECT c.id FROM changed c
                 WHERE c.new_state = 'pending'
                   AND EXISTS (SELECT 1 FROM tide.allocations a WHERE a.job_id = c.id AND a.state <> 'released')
                 ORDER BY c.id LIMIT 1) AS live_id
          FROM (SELECT 1) one
          LEFT JOIN LATERAL (
              SELECT l.job_id, l.old_state, l.new_state FROM logged l
               WHERE NOT EXISTS (SELECT 1 FROM tide.job_transitions t
                                  WHERE t.old_state = l.old_state AND t.new_state = l.new_state)
                  -- only the cycle gives a placement back (src/cycle.c)
                  OR (l.old_state = 'allocated' AND l.new_state = 'pending' AND NOT tide._cycle_writing())
               ORDER BY l.job_id
               LIMIT 1) b ON true $q$ INTO r USING tide._current_cycle();
    IF r.bad_id IS NOT NULL THEN
        RAISE EXCEPTION 'job % cannot go from % to %', r.bad_id, r.old_state, r.new_state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The allowed changes are listed in tide.job_transitions (docs/lifecycle.md).';
    END IF;
    IF r.live_id IS NOT NULL THEN
        RAISE EXCEPTION 'job % cannot be pending: it has live allocations', r.live_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Evict it first (its allocations must be released before it waits again).';
    END IF;
    IF r.cancels IS NOT NULL THEN
        PERFORM tide._apply_cancel(r.cancels);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_update() IS
    'statement trigger: refuses any job state change not in tide.job_transitions, logs the others in tide.job_events, and carries out cancel requests';
CREATE TRIGGER jobs_after_update AFTER UPDATE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_after_update();

CREATE FUNCTION tide._jobs_after_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
BEGIN
    -- A job holding resources has processes on nodes: deleting its rows
    -- would leave them running on GPUs the next cycle gives away.
    SELECT o.id, o.state INTO bad FROM old_jobs o
     WHERE o.state IN ('allocated', 'running', 'evicting') AND NOT tide._restoring()
     ORDER BY o.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job % is %: it cannot be deleted while it holds resources', bad.id, bad.state
            USING ERRCODE = 'object_in_use',
                  HINT = 'Cancel it (tide.cancel) and delete it once it is cancelled, when its launchers have stopped it.';
    END IF;
    DELETE FROM tide.job_events e USING old_jobs o WHERE e.job_id = o.id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_delete() IS
    'statement trigger: refuses to delete jobs that hold resources (allocated, running, evicting); a deleted job takes its tide.job_events rows with it (what ON DELETE CASCADE did, one statement per delete)';
CREATE TRIGGER jobs_after_delete AFTER DELETE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_after_delete();

CREATE FUNCTION tide._job_events_refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RAISE EXCEPTION 'tide.job_events is append-only'
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'History rows are never changed; an administrator may delete old rows for retention.';
END
$$;
COMMENT ON FUNCTION tide._job_events_refuse_change() IS 'trigger: job history rows are never updated (R-C4)';
CREATE TRIGGER job_events_append_only BEFORE UPDATE ON tide.job_events
    FOR EACH STATEMENT EXECUTE FUNCTION tide._job_events_refuse_change();

-- ---------------------------------------------------------------- nodes
-- A node's capacity, GPU type and resource group may change only in ways
-- its live allocations survive: otherwise a node could be over capacity, a
-- GPU in use could vanish, or work could cross resource groups (R-C4).
CREATE FUNCTION tide._nodes_before_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    live bigint;
    used tide.resvec;
    busy tide.gpumask;
BEGIN
    SELECT count(*), tide.sum(a.resources), tide.union(a.gpus) INTO live, used, busy
      FROM tide.allocations a
     WHERE a.node = OLD.name AND a.state <> 'released';
    IF live = 0 THEN
        RETURN NEW;
    END IF;
    IF NEW.resource_group IS DISTINCT FROM OLD.resource_group OR NEW.gpu_type IS DISTINCT FROM OLD.gpu_type THEN
        RAISE EXCEPTION 'node "%" has % live allocations: its resource group and GPU type cannot change', OLD.name, live
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drain it with tide.drain_node() and change it once its work is done.';
    END IF;
    IF NOT (NEW.capacity OPERATOR(tide.@>) used) THEN
        RAISE EXCEPTION 'capacity "%" of node "%" does not hold its live allocations ("%")', NEW.capacity, OLD.name, used
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drain it with tide.drain_node() and shrink it once enough of its work is done.';
    END IF;
    IF NOT (tide._all_gpus(tide.get(NEW.capacity, 'gpu')) OPERATOR(tide.@>) busy) THEN
        RAISE EXCEPTION 'node "%" would lose GPUs in use (%)', OLD.name, busy
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drain it with tide.drain_node() and shrink it once those GPUs are free.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._nodes_before_update() IS
    'trigger: refuses a change of capacity, GPU type or resource group that the node''s live allocations would not survive (R-C4)';
CREATE TRIGGER nodes_before_update BEFORE UPDATE ON tide.nodes
    FOR EACH ROW
    WHEN (OLD.resource_group IS DISTINCT FROM NEW.resource_group
          OR OLD.gpu_type IS DISTINCT FROM NEW.gpu_type
          OR NOT (OLD.capacity OPERATOR(tide.=) NEW.capacity))
    EXECUTE FUNCTION tide._nodes_before_update();

-- ---------------------------------------------------------------- allocations
CREATE FUNCTION tide._allocations_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    SELECT n.id, n.state INTO bad FROM new_allocations n
     WHERE n.state <> 'assigned' ORDER BY n.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'a new allocation must be assigned, not % (allocation %)', bad.state, bad.id
            USING ERRCODE = 'check_violation',
                  HINT = 'Insert allocations in state assigned; the launcher moves them on.';
    END IF;
    -- Each allocation places a replica of a task of its job (what a foreign
    -- key to tide.job_tasks would check, without locking every task row).
    -- The cycle's own insert has checked more (its jobs' tasks are those it
    -- loaded, and cannot change: src/cycle.c), so it skips this.
    IF NOT tide._cycle_writing() THEN
        EXECUTE $q$
            SELECT n.id, n.job_id, n.role FROM new_allocations n
             WHERE NOT EXISTS (SELECT 1 FROM tide.job_tasks t
                                WHERE t.job_id = n.job_id AND t.role = n.role)
             ORDER BY n.id LIMIT 1 $q$ INTO bad;
        IF bad.id IS NOT NULL THEN
            RAISE EXCEPTION 'allocation % names task "%" of job %, which does not exist', bad.id, bad.role, bad.job_id
                USING ERRCODE = 'foreign_key_violation',
                      HINT = 'Allocations place replicas of rows of tide.job_tasks.';
        END IF;
    END IF;
    -- R-C4: what the live allocations of a node hold fits in its capacity,
    -- and no GPU is given twice (whole GPUs: masks never overlap; shares of
    -- one GPU: at most 1000 milli, on a GPU no whole allocation holds).
    EXECUTE $q$
        WITH touched AS (SELECT DISTINCT n.node FROM new_allocations n),
        live AS (
            SELECT a.node,
                   tide.sum(a.resources) AS held,
                   tide.union(a.gpus) FILTER (WHERE a.gpu_milli IS NULL) AS whole,
                   pg_catalog.sum(tide.gpu_count(a.gpus)) FILTER (WHERE a.gpu_milli IS NULL) AS whole_count,
                   tide.union(a.gpus) AS used
              FROM tide.allocations a JOIN touched t ON t.node = a.node
             WHERE a.state <> 'released'
             GROUP BY a.node)
        SELECT l.node,
               CASE WHEN NOT (nd.capacity OPERATOR(tide.@>) l.held)
                        THEN pg_catalog.format('live allocations hold %s, capacity is %s', l.held, nd.capacity)
                    WHEN coalesce(l.whole_count, 0) <> tide.gpu_count(coalesce(l.whole, ''::tide.gpumask))
                        THEN 'a GPU is given to two allocations'
                    WHEN NOT (tide._all_gpus(tide.get(nd.capacity, 'gpu')) OPERATOR(tide.@>) l.used)
                        THEN pg_catalog.format('GPUs %s are not all on the node', l.used)
               END AS problem
          FROM live l JOIN tide.nodes nd ON nd.name = l.node
         WHERE NOT (nd.capacity OPERATOR(tide.@>) l.held)
            OR coalesce(l.whole_count, 0) <> tide.gpu_count(coalesce(l.whole, ''::tide.gpumask))
            OR NOT (tide._all_gpus(tide.get(nd.capacity, 'gpu')) OPERATOR(tide.@>) l.used)
        UNION ALL
        SELECT f.node, pg_catalog.format('GPU %s is shared beyond one GPU or also given whole', f.gpu)
          FROM (SELECT a.node, a.gpus::text AS gpu, pg_catalog.sum(a.gpu_milli) AS milli
                  FROM tide.allocations a
                 WHERE a.state <> 'released' AND a.gpu_milli IS NOT NULL
                   AND a.node IN (SELECT n.node FROM new_allocations n)
                 GROUP BY a.node, a.gpus::text) f
         WHERE f.milli > 1000
            OR EXISTS (SELECT 1 FROM tide.allocations w
                        WHERE w.node = f.node AND w.state <> 'released' AND w.gpu_milli IS NULL
                          AND w.gpus OPERATOR(tide.&&) f.gpu::tide.gpumask)
         ORDER BY 1
         LIMIT 1 $q$ INTO bad;
    IF bad.node IS NOT NULL THEN
        RAISE EXCEPTION 'node "%" would be overcommitted: %', bad.node, bad.problem
            USING ERRCODE = 'check_violation',
                  HINT = 'Live allocations (assigned, running, releasing) of a node must fit in its capacity and never share a GPU (R-C4).';
    END IF;

    -- Wake each node's launcher once (delivered at commit).
    PERFORM pg_catalog.pg_notify(tide.node_channel(s.node), 'claim')
       FROM (SELECT DISTINCT n.node FROM new_allocations n) s;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._allocations_after_insert() IS
    'statement trigger: new allocations are assigned and fit their nodes (capacity, no GPU given twice: R-C4); notifies each node''s launcher once';
CREATE TRIGGER allocations_after_insert AFTER INSERT ON tide.allocations
    REFERENCING NEW TABLE AS new_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION tide._allocations_after_insert();

CREATE FUNCTION tide._allocations_after_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
    changed bigint[];
    failed bigint[];
    lost bigint[];
BEGIN
    -- Dynamic SQL: planned for this statement's transition table sizes.
    EXECUTE $q$
        SELECT o.id, o.state AS old_state, n.state AS new_state
          FROM old_allocations o JOIN new_allocations n ON n.id = o.id
         WHERE (o.state <> n.state
                AND NOT EXISTS (SELECT 1 FROM tide.allocation_transitions t
                                 WHERE t.old_state = o.state AND t.new_state = n.state))
            OR (o.state = 'released'
                AND (o.exit_code, o.released_at, o.release_reason, o.node, o.job_id)
                    IS DISTINCT FROM (n.exit_code, n.released_at, n.release_reason, n.node, n.job_id))
         ORDER BY o.id
         LIMIT 1 $q$ INTO bad;
    IF bad.id IS NOT NULL THEN
        IF bad.old_state = 'released' THEN
            RAISE EXCEPTION 'allocation % is released and cannot change', bad.id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'An allocation is released exactly once.';
        END IF;
        RAISE EXCEPTION 'allocation % cannot go from % to %', bad.id, bad.old_state, bad.new_state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The allowed changes are listed in tide.allocation_transitions (docs/lifecycle.md).';
    END IF;

    -- Only an eviction stops an allocation that way (tide._evict, cancel, a
    -- failed gang member): its job is evicting or over by then.  A
    -- launcher's own UPDATE to releasing would leave a job running with
    -- nothing behind it.  Sessions of administrators (and superusers) may,
    -- as they may change anything.
    IF NOT pg_catalog.pg_has_role(SESSION_USER, 'tide_admin', 'MEMBER') THEN
        EXECUTE $q$
            SELECT n.id, n.job_id, j.state
              FROM old_allocations o JOIN new_allocations n ON n.id = o.id
              JOIN tide.jobs j ON j.id = n.job_id
             WHERE n.state = 'releasing' AND o.state <> 'releasing'
               AND j.state NOT IN ('evicting', 'failed', 'cancelled', 'succeeded')
             ORDER BY n.id
             LIMIT 1 $q$ INTO bad;
    END IF;
    IF bad.id IS NOT NULL THEN
        RAISE EXCEPTION 'allocation % cannot be released while job % is %', bad.id, bad.job_id, bad.state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Stop work through an eviction (the scheduling cycle, tide.cancel); a process that ended is reported with tide.exited.';
    END IF;

    -- Wake the launchers of nodes that have something new to stop.
    EXECUTE $q$
        SELECT pg_catalog.count(pg_catalog.pg_notify(tide.node_channel(s.node), 'evict'))
          FROM (SELECT DISTINCT n.node
                  FROM old_allocations o JOIN new_allocations n ON n.id = o.id
                 WHERE n.state = 'releasing' AND o.state <> 'releasing') s $q$;

    EXECUTE $q$
        SELECT pg_catalog.array_agg(DISTINCT n.job_id),
               pg_catalog.array_agg(n.id) FILTER (WHERE n.state = 'released' AND n.exit_code <> 0
                                                   AND n.release_reason = 'exited'),
               pg_catalog.array_agg(n.id) FILTER (WHERE n.state = 'released' AND o.state IN ('assigned', 'running')
                                                   AND n.release_reason IS DISTINCT FROM 'exited')
          FROM old_allocations o JOIN new_allocations n ON n.id = o.id
         WHERE o.state <> n.state $q$ INTO changed, failed, lost;
    IF changed IS NOT NULL THEN
        PERFORM tide._rollup_jobs(changed, coalesce(failed, '{}'), coalesce(lost, '{}'));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._allocations_after_update() IS
    'statement trigger: refuses allocation state changes not in tide.allocation_transitions and any change of a released one, notifies launchers of new evictions, and rolls job states up';
CREATE TRIGGER allocations_after_update AFTER UPDATE ON tide.allocations
    REFERENCING OLD TABLE AS old_allocations NEW TABLE AS new_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION tide._allocations_after_update();

-- ---------------------------------------------------------------- roll-up
-- Set-based helpers used by the triggers, tide.cancel and the cycle.  They are
-- SECURITY DEFINER and not executable by PUBLIC (40_roles.sql).

CREATE FUNCTION tide._evict(job_ids bigint[], reasons text[], goals text[] DEFAULT NULL,
                            preemptor_ids bigint[] DEFAULT NULL)
    RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    evicted bigint[];
BEGIN
    -- jobs: allocated or running -> evicting, goal given or the job's on_evict
    WITH d AS (
        SELECT u.job_id, u.reason, u.goal, u.preemptor
          FROM unnest(job_ids, reasons, goals, preemptor_ids) AS u(job_id, reason, goal, preemptor)
    ), e AS (
        UPDATE tide.jobs j
           SET state = 'evicting',
               evict_goal = coalesce(d.goal, j.on_evict),
               state_reason = d.reason
          FROM d
         WHERE j.id = d.job_id AND j.state IN ('allocated', 'running')
        RETURNING j.id, j.evict_goal
    )
    SELECT pg_catalog.array_agg(e.id ORDER BY e.id) INTO evicted FROM e;
    IF evicted IS NULL THEN
        RETURN '{}';
    END IF;

    INSERT INTO tide.evictions (job_id, cycle_id, reason, preemptor_job_id, goal)
    SELECT d.job_id, tide._current_cycle(), coalesce(d.reason, 'evicted'), d.preemptor, j.evict_goal
      FROM unnest(job_ids, reasons, preemptor_ids) AS d(job_id, reason, preemptor)
      JOIN tide.jobs j ON j.id = d.job_id
     WHERE d.job_id = ANY (evicted)
     ORDER BY d.job_id;

    UPDATE tide.allocations a
       SET state = 'releasing',
           release_reason = coalesce(d.reason, 'evicted')
      FROM unnest(job_ids, reasons) AS d(job_id, reason)
     WHERE a.job_id = d.job_id AND d.job_id = ANY (evicted)
       AND a.state IN ('assigned', 'running');

    -- A job without live allocations has nothing to wait for.
    PERFORM tide._rollup_jobs(evicted, '{}', '{}');
    RETURN evicted;
END
$$;
COMMENT ON FUNCTION tide._evict(bigint[], text[], text[], bigint[]) IS
    'evicts jobs set-based (R-E5): allocated or running jobs become evicting with the goal given (NULL: their on_evict), one tide.evictions row each, their live allocations releasing; returns the ids evicted';

CREATE FUNCTION tide._apply_cancel(job_ids bigint[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    live bigint[];
BEGIN
    UPDATE tide.jobs j
       SET state = 'cancelled', state_reason = 'cancelled', pending_reason = NULL,
           finished_at = pg_catalog.now()
     WHERE j.id = ANY (job_ids) AND j.state = 'pending';

    UPDATE tide.jobs j
       SET evict_goal = 'cancel'
     WHERE j.id = ANY (job_ids) AND j.state = 'evicting' AND j.evict_goal <> 'cancel';
    -- and the open eviction rows say so too: tide.evictions is the record
    UPDATE tide.evictions e
       SET goal = 'cancel'
     WHERE e.job_id = ANY (job_ids) AND e.acked_at IS NULL AND e.goal <> 'cancel'
       AND EXISTS (SELECT 1 FROM tide.jobs j WHERE j.id = e.job_id AND j.state = 'evicting');

    SELECT pg_catalog.array_agg(j.id ORDER BY j.id) INTO live
      FROM tide.jobs j
     WHERE j.id = ANY (job_ids) AND j.state IN ('allocated', 'running');
    IF live IS NOT NULL THEN
        PERFORM tide._evict(live,
                            pg_catalog.array_fill('cancelled'::text, ARRAY[pg_catalog.cardinality(live)]),
                            pg_catalog.array_fill('cancel'::text, ARRAY[pg_catalog.cardinality(live)]));
    END IF;
END
$$;
COMMENT ON FUNCTION tide._apply_cancel(bigint[]) IS
    'carries out cancel requests: pending -> cancelled; allocated or running -> evicting with goal cancel; an eviction in progress ends cancelled';

CREATE FUNCTION tide._create_retries(job_ids bigint[]) RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    made bigint[];
BEGIN
    WITH r AS (
        INSERT INTO tide.jobs (name, queue, owner, priority, created_at, service_type, preemptable,
                               idle, reserve, min_available, node_selector, gpu_type, time_limit,
                               max_retries, retry_of, attempt, avoid_nodes, on_evict, command,
                               state_reason)
        SELECT j.name, j.queue, j.owner, j.priority, j.created_at, j.service_type, j.preemptable,
               j.idle, j.reserve, j.min_available, j.node_selector, j.gpu_type, j.time_limit,
               j.max_retries, j.id, j.attempt + 1, j.avoid_nodes, j.on_evict, j.command,
               pg_catalog.format('attempt %s: retry of failed job %s', j.attempt + 1, j.id)
          FROM tide.jobs j
         WHERE j.id = ANY (job_ids)
           AND j.state = 'failed'
           AND j.attempt <= j.max_retries
           AND NOT EXISTS (SELECT 1 FROM tide.jobs x WHERE x.retry_of = j.id)
         ORDER BY j.id
        RETURNING id, retry_of
    )
    SELECT pg_catalog.array_agg(r.id ORDER BY r.id) INTO made FROM r;
    IF made IS NULL THEN
        RETURN '{}';
    END IF;
    INSERT INTO tide.job_tasks (job_id, role, replicas, request)
    SELECT n.id, t.role, t.replicas, t.request
      FROM tide.jobs n JOIN tide.job_tasks t ON t.job_id = n.retry_of
     WHERE n.id = ANY (made)
     ORDER BY n.id, t.role;
    RETURN made;
END
$$;
COMMENT ON FUNCTION tide._create_retries(bigint[]) IS
    'for failed jobs with retries left (attempt <= max_retries): creates the retry job (retry_of, attempt + 1, same tasks, request, priority, queue, owner, avoid_nodes) for the retry lane (R-O3)';

CREATE FUNCTION tide._rollup_jobs(job_ids bigint[], failed_allocs bigint[], lost_allocs bigint[])
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ids bigint[];
    reasons text[];
    goals text[];
    finished bigint[];
BEGIN
    -- 1. The first non-zero exit fails an allocated or running job; the
    --    node it failed on is avoided by its retry.
    WITH f AS (
        SELECT DISTINCT ON (a.job_id) a.job_id, a.node, a.exit_code,
               pg_catalog.format('replica %s of role %s exited with code %s on node %s',
                                 a.replica, a.role, a.exit_code, a.node) AS reason
          FROM tide.allocations a
         WHERE a.id = ANY (failed_allocs)
         ORDER BY a.job_id, a.released_at, a.id
    ), u AS (
        UPDATE tide.jobs j
           SET state = 'failed', state_reason = f.reason, exit_code = f.exit_code,
               finished_at = pg_catalog.now(),
               avoid_nodes = CASE WHEN f.node = ANY (j.avoid_nodes) THEN j.avoid_nodes
                                  ELSE j.avoid_nodes || f.node END
          FROM f
         WHERE j.id = f.job_id AND j.state IN ('allocated', 'running')
        RETURNING j.id
    )
    SELECT pg_catalog.array_agg(u.id ORDER BY u.id) INTO ids FROM u;
    IF ids IS NOT NULL THEN
        -- Its other replicas are told to stop (a job that failed keeps no
        -- evict_goal: it is already final).
        INSERT INTO tide.evictions (job_id, cycle_id, reason, goal)
        SELECT DISTINCT a.job_id, tide._current_cycle(), 'gang member failed', 'fail'
          FROM tide.allocations a
         WHERE a.job_id = ANY (ids) AND a.state IN ('assigned', 'running');
        UPDATE tide.allocations a
           SET state = 'releasing', release_reason = 'gang member failed'
         WHERE a.job_id = ANY (ids) AND a.state IN ('assigned', 'running');
        PERFORM tide._create_retries(ids);
    END IF;

    -- 2. A replica released without exiting (a lost node) interrupts the
    --    job: with retries left it fails and is retried, else its on_evict.
    SELECT pg_catalog.array_agg(x.job_id ORDER BY x.job_id),
           pg_catalog.array_agg(x.reason ORDER BY x.job_id),
           pg_catalog.array_agg(x.goal ORDER BY x.job_id)
      INTO ids, reasons, goals
      FROM (SELECT DISTINCT ON (a.job_id) a.job_id,
                   pg_catalog.format('replica %s of role %s lost on node %s: %s',
                                     a.replica, a.role, a.node, coalesce(a.release_reason, 'released')) AS reason,
                   CASE WHEN j.attempt <= j.max_retries THEN 'fail' ELSE j.on_evict END AS goal
              FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
             WHERE a.id = ANY (lost_allocs) AND j.state IN ('allocated', 'running')
             ORDER BY a.job_id, a.released_at, a.id) x;
    IF ids IS NOT NULL THEN
        UPDATE tide.jobs j
           SET avoid_nodes = j.avoid_nodes || l.nodes
          FROM (SELECT a.job_id, pg_catalog.array_agg(DISTINCT a.node) AS nodes
                  FROM tide.allocations a
                 WHERE a.id = ANY (lost_allocs) AND a.job_id = ANY (ids)
                 GROUP BY a.job_id) l
         WHERE j.id = l.job_id AND NOT (j.avoid_nodes @> l.nodes);
        PERFORM tide._evict(ids, reasons, goals);
    END IF;

    -- 3. Every replica started: allocated -> running.  One grouped pass
    -- over the jobs' allocations (two EXISTS probes per job were planned as
    -- index scans on state, 250 ms per 1,000 starts after a burst).
    UPDATE tide.jobs j
       SET state = 'running', state_reason = 'all replicas started', started_at = pg_catalog.now()
      FROM (SELECT a.job_id FROM tide.allocations a
             WHERE a.job_id = ANY (job_ids)
             GROUP BY a.job_id
            HAVING NOT pg_catalog.bool_or(a.state = 'assigned')
               AND pg_catalog.bool_or(a.state = 'running')) r
     WHERE j.id = r.job_id AND j.state = 'allocated';

    -- 4. Every replica exited 0: succeeded.
    UPDATE tide.jobs j
       SET state = 'succeeded', state_reason = 'all replicas exited 0', exit_code = 0,
           finished_at = pg_catalog.now()
     WHERE j.id = ANY (job_ids) AND j.state IN ('allocated', 'running')
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = j.id AND a.state <> 'released')
       AND EXISTS (SELECT 1 FROM tide.allocations a
                    WHERE a.job_id = j.id AND a.release_reason = 'exited' AND a.exit_code = 0);

    -- 5. Evictions whose allocations are all released reach their goal.
    WITH done AS (
        UPDATE tide.jobs j
           SET state = CASE j.evict_goal WHEN 'requeue' THEN 'pending'
                                         WHEN 'fail' THEN 'failed'
                                         ELSE 'cancelled' END,
               state_reason = CASE j.evict_goal
                                  WHEN 'requeue' THEN 'requeued after eviction: ' || coalesce(j.state_reason, 'evicted')
                                  WHEN 'fail' THEN 'failed by eviction: ' || coalesce(j.state_reason, 'evicted')
                                  ELSE 'cancelled' END,
               pending_reason = CASE j.evict_goal WHEN 'requeue' THEN 'requeued after eviction' END,
               finished_at = CASE WHEN j.evict_goal = 'requeue' THEN NULL ELSE pg_catalog.now() END,
               started_at = CASE WHEN j.evict_goal = 'requeue' THEN NULL ELSE j.started_at END,
               evict_goal = NULL
         WHERE j.id = ANY (job_ids) AND j.state = 'evicting'
           AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                            WHERE a.job_id = j.id AND a.state <> 'released')
        RETURNING j.id, j.state
    )
    SELECT pg_catalog.array_agg(done.id ORDER BY done.id) FILTER (WHERE done.state = 'failed')
      INTO finished FROM done;
    IF finished IS NOT NULL THEN
        PERFORM tide._create_retries(finished);
    END IF;

    -- 6. Evictions of jobs with nothing live left are acknowledged.
    UPDATE tide.evictions e
       SET acked_at = pg_catalog.now()
     WHERE e.job_id = ANY (job_ids) AND e.acked_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = e.job_id AND a.state <> 'released');
END
$$;
COMMENT ON FUNCTION tide._rollup_jobs(bigint[], bigint[], bigint[]) IS
    'rolls allocation changes up to their jobs: first non-zero exit fails the gang, a lost replica evicts it, all started -> running, all exited 0 -> succeeded, an eviction with nothing live reaches its goal';

CREATE FUNCTION tide._nodes_lost(nodes text[], reason text DEFAULT 'node down') RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    affected bigint[];
    hit text[];
BEGIN
    UPDATE tide.nodes n SET state = 'down' WHERE n.name = ANY (nodes) AND n.state <> 'down';
    SELECT pg_catalog.array_agg(DISTINCT a.job_id), pg_catalog.array_agg(DISTINCT a.node) INTO affected, hit
      FROM tide.allocations a
     WHERE a.node = ANY (nodes) AND a.state <> 'released';
    -- Lock the jobs first (lock order: jobs, then allocations).
    PERFORM 1 FROM tide.jobs j WHERE j.id = ANY (affected) ORDER BY j.id FOR NO KEY UPDATE;
    UPDATE tide.allocations a
       SET state = 'released', released_at = pg_catalog.now(), release_reason = reason
     WHERE a.node = ANY (nodes) AND a.state <> 'released';
    -- A launcher that is only slow, not gone, must stop that work now, not
    -- at its next poll: the GPUs are free for the next cycle.  Its sync
    -- stops whatever it runs that the database released.
    PERFORM pg_catalog.pg_notify(tide.node_channel(h.node), 'evict')
       FROM pg_catalog.unnest(hit) AS h(node);
    RETURN coalesce(affected, '{}');
END
$$;
COMMENT ON FUNCTION tide._nodes_lost(text[], text) IS
    'marks nodes down and releases their live allocations; the roll-up evicts the jobs they belonged to (retry with retries left, else on_evict) (R-C3)';
