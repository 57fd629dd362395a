-- Roll-ups: set-based helpers used by the triggers, tide.cancel and the
-- cycle.  They are SECURITY DEFINER and not executable by PUBLIC
-- (40_roles.sql).  Evicting (tide._evict) is in 62_evictions.sql.

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
    backoff interval := tide._setting_interval('tide.retry_backoff', '10s');
    backoff_max interval := tide._setting_interval('tide.retry_backoff_max', '10min');
BEGIN
    WITH r AS (
        INSERT INTO tide.jobs (name, queue, owner, priority, created_at, service_type, preemptable,
                               idle, reserve, min_available, node_selector, gpu_type, time_limit,
                               warn_before, grace_period, max_retries, retry_of, attempt, avoid_nodes, on_evict, command,
                               env, workdir, labels, array_id, array_index, begin_at, state_reason)
        SELECT j.name, j.queue, j.owner, j.priority, j.created_at, j.service_type, j.preemptable,
               j.idle, j.reserve, j.min_available, j.node_selector, j.gpu_type, j.time_limit,
               j.warn_before, j.grace_period, j.max_retries, j.id, j.attempt + 1, j.avoid_nodes, j.on_evict, j.command,
               j.env, j.workdir, j.labels, j.array_id, j.array_index,
               -- R-T5: the command's own failure backs off, doubled per
               -- attempt and capped; an interrupted attempt (a lost node,
               -- an eviction: no exit code) comes back at once
               CASE WHEN j.exit_code <> 0 AND backoff > interval '0'
                    THEN pg_catalog.now() + LEAST(backoff * pg_catalog.power(2, LEAST(j.attempt - 1, 30)), backoff_max)
               END,
               pg_catalog.format('attempt %s: retry of failed job %s', j.attempt + 1, j.id)
          FROM tide.jobs j
         WHERE j.id = ANY (job_ids)
           AND j.state = 'failed'
           AND j.attempt <= j.max_retries
           AND NOT j.no_retry   -- stopped at its limit or start attempts (R-T1, R-T4)
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
    'for failed jobs with retries left (attempt <= max_retries): creates the retry job (retry_of, attempt + 1, same tasks, request, priority, queue, owner, avoid_nodes, limits, env, workdir, labels, array member) for the retry lane (R-O3), deferred by tide.retry_backoff doubled per attempt when the command failed (R-T5)';

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
    --    node it failed on is avoided by its retry.  An exit the launcher
    --    decided itself (it could not start the command) gives its reason.
    --    So does an exit of a job being evicted that happened before its
    --    stop was decided (R-T6): the job failed before it was stopped.
    WITH f AS (
        SELECT DISTINCT ON (a.job_id) a.job_id, a.node, a.exit_code,
               CASE WHEN a.exit_reason IS NULL
                    THEN pg_catalog.format('replica %s of role %s exited with code %s on node %s',
                                           a.replica, a.role, a.exit_code, a.node)
                    ELSE pg_catalog.format('launcher on node %s could not start replica %s of role %s: %s (exit code %s)',
                                           a.node, a.replica, a.role, a.exit_reason, a.exit_code)
               END AS reason,
               coalesce(a.exited_at < a.release_decided_at, false) AS before_stop
          FROM tide.allocations a
         WHERE a.id = ANY (failed_allocs)
         ORDER BY a.job_id, a.released_at, a.id
    ), u AS (
        UPDATE tide.jobs j
           SET state = 'failed', exit_code = f.exit_code, evict_goal = NULL,
               state_reason = CASE WHEN j.state = 'evicting'
                                   THEN f.reason || ', before its stop was decided (' || coalesce(j.state_reason, 'evicted') || ')'
                                   ELSE f.reason END,
               finished_at = pg_catalog.now(),
               avoid_nodes = CASE WHEN f.node = ANY (j.avoid_nodes) THEN j.avoid_nodes
                                  ELSE j.avoid_nodes || f.node END
          FROM f
         WHERE j.id = f.job_id
           AND (j.state IN ('allocated', 'running') OR (j.state = 'evicting' AND f.before_stop))
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

    -- 4b. R-T6: an evicting job whose placement had all exited 0 before
    --     its stop was decided (the exits were reported after it) finished:
    --     succeeded, not requeued, failed or retried.  Its placement: the
    --     allocations of the cycle that made its latest one.
    UPDATE tide.jobs j
       SET state = 'succeeded', evict_goal = NULL, exit_code = 0, pending_reason = NULL,
           finished_at = pg_catalog.now(),
           state_reason = 'all replicas exited 0 before its stop was decided (' || coalesce(j.state_reason, 'evicted') || ')'
     WHERE j.id = ANY (job_ids) AND j.state = 'evicting'
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = j.id AND a.state <> 'released')
       AND EXISTS (SELECT 1 FROM tide.allocations a
                    WHERE a.job_id = j.id AND a.release_reason = 'exited' AND a.exited_at < a.release_decided_at)
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = j.id
                          AND a.cycle_id IS NOT DISTINCT FROM (SELECT l.cycle_id FROM tide.allocations l
                                                                WHERE l.job_id = j.id ORDER BY l.id DESC LIMIT 1)
                          AND NOT (a.release_reason = 'exited' AND a.exit_code = 0
                                   AND (a.release_decided_at IS NULL OR a.exited_at < a.release_decided_at)));

    -- 5. Evictions whose allocations are all released reach their goal.
    WITH done AS (
        UPDATE tide.jobs j
           SET state = CASE j.evict_goal WHEN 'requeue' THEN 'pending'
                                         WHEN 'fail' THEN 'failed'
                                         ELSE 'cancelled' END,
               state_reason = CASE j.evict_goal
                                  WHEN 'requeue' THEN 'requeued after eviction: ' || coalesce(j.state_reason, 'evicted')
                                  -- a stop of its own (R-T1, R-T4) is no eviction by others
                                  WHEN 'fail' THEN CASE WHEN j.no_retry THEN j.state_reason
                                                        ELSE 'failed by eviction: ' || coalesce(j.state_reason, 'evicted') END
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
    'rolls allocation changes up to their jobs: first non-zero exit fails the gang (also an evicting one, when it exited before its stop was decided, R-T6), a lost replica evicts it, all started -> running, all exited 0 -> succeeded (also an evicting job whose replicas all exited 0 before its stop was decided), an eviction with nothing live reaches its goal';

-- R-C3: the nodes not down whose launcher has been silent for longer than
-- timeout, counted from its last heartbeat or, when later (or when it
-- never sent one), from the time the node was registered or last changed
-- state: a node whose launcher never started is lost too, and a node just
-- resumed gets a full timeout to send its first heartbeat.
CREATE FUNCTION tide._nodes_silent(timeout interval) RETURNS TABLE(name text, reason text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT n.name,
       CASE WHEN n.heartbeat_at IS NULL
            THEN pg_catalog.format('no heartbeat since it was registered, more than %s ago', timeout)
            WHEN n.heartbeat_at < n.state_since
            THEN pg_catalog.format('no heartbeat since it became %s, more than %s ago', n.state, timeout)
            ELSE pg_catalog.format('no heartbeat for more than %s', timeout)
       END
  FROM tide.nodes n
 WHERE n.state <> 'down'
   AND GREATEST(n.heartbeat_at, n.state_since) < pg_catalog.now() - timeout
$$;
COMMENT ON FUNCTION tide._nodes_silent(interval) IS
    'the nodes not down with no heartbeat for longer than timeout since their last one, their registration or their last state change, and why (R-C3)';

-- lost: the cycle gave up on the nodes (their next heartbeat brings them
-- back as they were); otherwise an administrator set them down.
CREATE FUNCTION tide._nodes_lost(nodes text[], reason text DEFAULT 'node down', lost boolean DEFAULT false)
    RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    affected bigint[];
    hit text[];
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT a.job_id), pg_catalog.array_agg(DISTINCT a.node) INTO affected, hit
      FROM tide.allocations a
     WHERE a.node = ANY (nodes) AND a.state <> 'released';
    -- Lock the jobs first (lock order: jobs, then allocations).
    PERFORM 1 FROM tide.jobs j WHERE j.id = ANY (affected) ORDER BY j.id FOR NO KEY UPDATE;
    UPDATE tide.allocations a
       SET state = 'released', released_at = pg_catalog.now(), release_reason = reason
     WHERE a.node = ANY (nodes) AND a.state <> 'released';
    -- then the nodes: their work is released already, with this reason, so
    -- the trigger that releases the work of a node set down by a plain
    -- UPDATE (37_node_admin.sql) finds nothing left to do
    UPDATE tide.nodes n
       SET state = 'down', down_reason = CASE WHEN lost THEN 'lost' ELSE 'admin' END
     WHERE n.name = ANY (nodes) AND n.state <> 'down';
    -- A launcher that is only slow, not gone, must stop that work now, not
    -- at its next poll: the GPUs are free for the next cycle.  Its sync
    -- stops whatever it runs that the database released.
    PERFORM pg_catalog.pg_notify(tide.node_channel(h.node), 'evict')
       FROM pg_catalog.unnest(hit) AS h(node);
    RETURN coalesce(affected, '{}');
END
$$;
COMMENT ON FUNCTION tide._nodes_lost(text[], text, boolean) IS
    'marks nodes down (lost: by the cycle, else by an administrator) and releases their live allocations; the roll-up evicts the jobs they belonged to (retry with retries left, else on_evict) (R-C3)';
