-- The API of platform backends and administrators: submit, cancel, nodes.
--
-- These functions run with the caller's rights (SECURITY INVOKER): what a
-- caller may do is decided by the table privileges and row-level security of
-- 40_roles.sql, so calling a function never grants more than the equivalent
-- SQL.  Checks and history are done by the triggers of 23_job_checks.sql,
-- 24_job_history.sql and 25_allocations.sql.
--
-- tide.submit is C (src/submit.c): it checks its arguments once, with the
-- functions the triggers call (so that an error names the argument), then
-- inserts the job, its task and its event row itself while a flag only it
-- can set makes the triggers that would check and log the same rows again
-- step aside (their WHEN (tide._writer() <> 'submit')).

CREATE FUNCTION tide.submit(
    queue         text,
    request       tide.resvec,
    replicas      integer DEFAULT 1,
    priority      integer DEFAULT 0,
    name          text DEFAULT NULL,
    idle          boolean DEFAULT false,
    reserve       boolean DEFAULT false,
    service_type  text DEFAULT NULL,
    preemptable   boolean DEFAULT true,
    min_available integer DEFAULT NULL,
    gpu_type      text DEFAULT NULL,
    node_selector jsonb DEFAULT '{}',
    time_limit    interval DEFAULT NULL,
    max_retries   integer DEFAULT 0,
    on_evict      text DEFAULT 'requeue',
    command       text DEFAULT NULL,
    role          text DEFAULT 'main',
    -- pipelines (R-P1..R-P6, 32_pipelines.sql) and the job's payload
    after         bigint[] DEFAULT NULL,
    hold          boolean DEFAULT false,
    begin_at      timestamptz DEFAULT NULL,
    env           jsonb DEFAULT '{}',
    workdir       text DEFAULT NULL,
    labels        jsonb DEFAULT '{}',
    key           text DEFAULT NULL,
    -- a job's run (R-T1..R-T3)
    warn_before   interval DEFAULT NULL,
    grace_period  interval DEFAULT NULL)
    RETURNS bigint
    LANGUAGE c VOLATILE
    AS 'MODULE_PATHNAME', 'tide_submit';
COMMENT ON FUNCTION tide.submit(text, tide.resvec, integer, integer, text, boolean, boolean, text, boolean,
                                integer, text, jsonb, interval, integer, text, text, text,
                                bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval) IS
    'submits a one-role job (replicas of one request) to a queue and returns its id; after: jobs that must succeed first (R-P1), hold: submitted held (R-P2), begin_at: not before (R-P3), key: a second submit with it returns this id (R-P6), time_limit: the queue''s default_time_limit when NULL, at most its max_time_limit (R-T1), warn_before: a signal that long before the limit (R-T2), grace_period: SIGTERM to SIGKILL (R-T3); multi-role jobs: insert into tide.jobs, tide.job_tasks (and tide.job_dependencies) in one transaction';

CREATE FUNCTION tide.cancel(job_id bigint) RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
    requested boolean;
    retry bigint;
BEGIN
    -- Lock the job row first (lock order: jobs, then allocations).
    SELECT j.state, j.cancel_requested INTO st, requested
      FROM tide.jobs j WHERE j.id = cancel.job_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % does not exist', coalesce(cancel.job_id::text, 'NULL')
            USING ERRCODE = 'undefined_object',
                  HINT = 'A submitter sees and cancels only its own jobs.';
    END IF;
    IF st = 'failed' THEN
        -- A job that failed may live on as its automatic retry (R-O3), made
        -- by the same failure that a cancel may have raced: cancelling the
        -- job cancels the attempt that is still alive (the deepest; the path
        -- ends a chain that an edited retry_of would loop).
        WITH RECURSIVE chain(id, state, path) AS (
            SELECT r.id, r.state, ARRAY[cancel.job_id, r.id] FROM tide.jobs r
             WHERE r.retry_of = cancel.job_id AND r.id <> cancel.job_id
            UNION ALL
            SELECT r.id, r.state, c.path OPERATOR(pg_catalog.||) r.id
              FROM tide.jobs r JOIN chain c ON r.retry_of = c.id
             WHERE r.id <> ALL (c.path)
        )
        SELECT c.id INTO retry FROM chain c
         WHERE c.state NOT IN ('succeeded', 'failed', 'cancelled')
         ORDER BY pg_catalog.cardinality(c.path) DESC, c.id DESC LIMIT 1;
        IF retry IS NOT NULL THEN
            RAISE NOTICE 'job % already failed; cancelling its retry, job %', cancel.job_id, retry;
            RETURN tide.cancel(retry);
        END IF;
    END IF;
    IF st IN ('succeeded', 'failed', 'cancelled') THEN
        RAISE NOTICE 'job % is already %; nothing to cancel', cancel.job_id, st;
        RETURN st;
    END IF;
    IF requested THEN
        RAISE NOTICE 'job % is already being cancelled', cancel.job_id;
        RETURN st;
    END IF;
    UPDATE tide.jobs j SET cancel_requested = true WHERE j.id = cancel.job_id;
    SELECT j.state INTO st FROM tide.jobs j WHERE j.id = cancel.job_id;
    RETURN st;
END
$$;
COMMENT ON FUNCTION tide.cancel(bigint) IS
    'cancels a job: pending -> cancelled at once; allocated or running -> evicting until its launchers confirm, then cancelled; a failed job''s live automatic retry is cancelled instead; returns the state it is now in';

-- The arguments of tide.register_node, each refused naming the node, the
-- value and the limit (before its INSERT: not as a constraint's name).
CREATE FUNCTION tide._check_node_values(name text, capacity tide.resvec, gpu_type text, labels jsonb,
                                        gpu_topology integer[], resource_group text)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    gpus numeric;
    ok boolean;
BEGIN
    ok := tide._check_name('node name', name);
    IF capacity IS NULL THEN
        RAISE EXCEPTION 'capacity of node "%" must not be NULL', tide._cut(name)
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Give the node''s resources, e.g. ''cpu=64, memory=512Gi, gpu=8''.';
    END IF;
    gpus := tide.get(capacity, 'gpu');
    IF gpus <> trunc(gpus) THEN
        RAISE EXCEPTION 'GPU count % of node "%" is not a whole number', gpus, tide._cut(name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF gpus > 64 THEN
        RAISE EXCEPTION 'node "%" has % GPUs, at most 64 are supported', tide._cut(name), gpus
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'A tide.gpumask holds GPU indices 0 to 63: register a larger machine as several nodes.';
    END IF;
    IF gpu_topology IS NOT NULL AND coalesce(cardinality(gpu_topology), 0) <> gpus THEN
        RAISE EXCEPTION 'gpu_topology of node "%" has % entries for % GPUs',
                tide._cut(name), coalesce(cardinality(gpu_topology), 0), gpus
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Give one topology domain id per GPU index, or NULL for one domain.';
    END IF;
    IF gpu_topology IS NOT NULL
       AND (pg_catalog.array_ndims(gpu_topology) <> 1 OR pg_catalog.array_position(gpu_topology, NULL) IS NOT NULL
            OR NOT (0 <= ALL (gpu_topology) AND 32767 >= ALL (gpu_topology))) THEN
        RAISE EXCEPTION 'gpu_topology of node "%" must be a list of domain ids from 0 to 32767, not %', tide._cut(name), tide._cut(gpu_topology::text)
            USING ERRCODE = 'check_violation',
                  HINT = 'Give one topology domain id per GPU index, e.g. ''{0,0,1,1}'', or NULL for one domain.';
    END IF;
    IF gpu_type IS NOT NULL THEN
        ok := tide._check_name(pg_catalog.format('gpu_type of node "%s"', tide._cut(name)), gpu_type);
    END IF;
    IF pg_catalog.jsonb_typeof(labels) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'labels of node "%" must be a JSON object, not %', tide._cut(name), coalesce(pg_catalog.jsonb_typeof(labels), 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'Give the node''s labels as keys and values, e.g. ''{"zone": "a"}'', or ''{}''.';
    END IF;
    ok := tide._check_name(pg_catalog.format('resource_group of node "%s"', tide._cut(name)), resource_group);
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_node_values(text, tide.resvec, text, jsonb, integer[], text) IS
    'refuses node values out of their range (a name, a capacity with whole GPUs up to 64, a topology of one domain id 0 to 32767 per GPU, a gpu_type and resource_group name, labels an object), naming the node';

CREATE FUNCTION tide.register_node(
    name           text,
    capacity       tide.resvec,
    gpu_type       text DEFAULT NULL,
    labels         jsonb DEFAULT '{}',
    gpu_topology   integer[] DEFAULT NULL,
    resource_group text DEFAULT 'default')
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ok boolean;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'node name must not be empty'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- (assigned, not PERFORMed: see tide._check_name)
    ok := tide._check_node_values(register_node.name, register_node.capacity, register_node.gpu_type,
                                  coalesce(register_node.labels, '{}'), register_node.gpu_topology,
                                  coalesce(register_node.resource_group, 'default'));
    INSERT INTO tide.nodes AS n (name, capacity, gpu_type, labels, gpu_topology, resource_group)
    VALUES (register_node.name, register_node.capacity, register_node.gpu_type,
            coalesce(register_node.labels, '{}'), register_node.gpu_topology,
            coalesce(register_node.resource_group, 'default'))
    ON CONFLICT ON CONSTRAINT nodes_pkey DO UPDATE
       SET capacity = EXCLUDED.capacity, gpu_type = EXCLUDED.gpu_type, labels = EXCLUDED.labels,
           gpu_topology = EXCLUDED.gpu_topology, resource_group = EXCLUDED.resource_group;
END
$$;
COMMENT ON FUNCTION tide.register_node(text, tide.resvec, text, jsonb, integer[], text) IS
    'adds a node (state ready) or updates an existing one''s capacity, GPU type, labels, topology and resource group (its state is kept)';

-- drain_node and resume_node: the node is locked, then changed unless it is
-- already where the call leads.  The caller's rights, like theirs.
CREATE FUNCTION tide._set_node_state(node text, from_states text[], to_state text) RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    SELECT n.state INTO st FROM tide.nodes n WHERE n.name = _set_node_state.node FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'node "%" does not exist', tide._cut(_set_node_state.node)
            USING ERRCODE = 'undefined_object';
    END IF;
    IF st <> ALL (from_states) THEN
        RAISE NOTICE 'node "%" is already %; nothing changed', tide._cut(_set_node_state.node), st;
        RETURN st;
    END IF;
    UPDATE tide.nodes n SET state = to_state WHERE n.name = _set_node_state.node;
    RETURN to_state;
END
$$;
COMMENT ON FUNCTION tide._set_node_state(text, text[], text) IS
    'moves a node to to_state if it is in one of from_states (else a notice); returns its state; for tide.drain_node and tide.resume_node';

CREATE FUNCTION tide.drain_node(node text) RETURNS text
    LANGUAGE sql
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT tide._set_node_state(node, '{ready}', 'draining') $$;
COMMENT ON FUNCTION tide.drain_node(text) IS
    'stops placing new work on a ready node (its running work stays); returns its state; undo with tide.resume_node';

-- A down node returns to the state it had before (a draining node that was
-- lost is draining again: resuming it twice makes it ready).
CREATE FUNCTION tide.resume_node(node text) RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    back text;
BEGIN
    SELECT n.state_before_down INTO back FROM tide.nodes n
     WHERE n.name = resume_node.node AND n.state = 'down' FOR UPDATE;
    RETURN tide._set_node_state(node, '{draining,down}', coalesce(back, 'ready'));
END
$$;
COMMENT ON FUNCTION tide.resume_node(text) IS
    'makes a down node what it was before it went down (ready or draining), a draining node ready; returns its state';

-- Every change of a node's state: when, and while down, from what and why.
CREATE FUNCTION tide._nodes_state_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.state = NEW.state THEN
        RETURN NEW;
    END IF;
    NEW.state_since := pg_catalog.now();
    IF NEW.state = 'down' THEN
        -- an UPDATE that does not say why is an administrator's
        IF TG_OP = 'INSERT' THEN
            NEW.state_before_down := coalesce(NEW.state_before_down, 'ready');
        ELSE
            NEW.state_before_down := OLD.state;
        END IF;
        NEW.down_reason := coalesce(NEW.down_reason, 'admin');
    ELSE
        NEW.state_before_down := NULL;
        NEW.down_reason := NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._nodes_state_change() IS
    'trigger: stamps state_since on each change of a node''s state; going down keeps the state before and why (admin unless said lost), leaving down clears them';
CREATE TRIGGER nodes_state_change BEFORE INSERT OR UPDATE OF state ON tide.nodes
    FOR EACH ROW EXECUTE FUNCTION tide._nodes_state_change();

-- R-A2: an unschedulable job is looked at again when queues or nodes change.
CREATE FUNCTION tide._reconsider_unschedulable() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    UPDATE tide.jobs j SET unschedulable = false
     WHERE j.state = 'pending' AND j.unschedulable;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._reconsider_unschedulable() IS
    'statement trigger: clears the unschedulable mark of pending jobs when queues or nodes change (R-A2)';
CREATE TRIGGER queues_changed AFTER INSERT OR DELETE OR UPDATE ON tide.queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._reconsider_unschedulable();
CREATE TRIGGER nodes_added AFTER INSERT OR DELETE ON tide.nodes
    FOR EACH STATEMENT EXECUTE FUNCTION tide._reconsider_unschedulable();
CREATE TRIGGER nodes_changed
    AFTER UPDATE OF capacity, gpu_type, gpu_topology, labels, state, allow_cpu_jobs, resource_group ON tide.nodes
    FOR EACH STATEMENT EXECUTE FUNCTION tide._reconsider_unschedulable();
