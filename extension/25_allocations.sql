-- Allocations: state changes checked against tide.allocation_transitions and
-- rolled up to their jobs (26_rollup.sql); what the live allocations of a
-- node hold always fits in it (R-C4), whether allocations are added or the
-- node changes.

-- The R-C4 reads of the triggers below, in the latest snapshot
-- (src/node_guard.c): their callers hold the node row locks, so whoever
-- wrote those nodes before has committed, even if a REPEATABLE READ
-- transaction's own snapshot is older than that commit.
CREATE FUNCTION tide._node_usage_now(node text, OUT live bigint, OUT used tide.resvec, OUT busy tide.gpumask)
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'tide_node_usage_now';
COMMENT ON FUNCTION tide._node_usage_now(text) IS
    'what the live allocations of a node hold, in the latest snapshot (for the node trigger, which holds the node row)';
REVOKE ALL ON FUNCTION tide._node_usage_now(text) FROM PUBLIC;

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
    -- this row is locked by now: see every allocation committed before
    SELECT u.live, u.used, u.busy INTO live, used, busy FROM tide._node_usage_now(OLD.name) u;
    IF live = 0 THEN
        RETURN NEW;
    END IF;
    IF NEW.resource_group IS DISTINCT FROM OLD.resource_group OR NEW.gpu_type IS DISTINCT FROM OLD.gpu_type THEN
        RAISE EXCEPTION 'node "%" has % live allocations: its resource group and GPU type cannot change', tide._cut(OLD.name), live
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drain it with tide.drain_node() and change it once its work is done.';
    END IF;
    IF NOT (NEW.capacity OPERATOR(tide.@>) used) THEN
        RAISE EXCEPTION 'capacity "%" of node "%" does not hold its live allocations ("%")', tide._cut(NEW.capacity::text), tide._cut(OLD.name), used
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drain it with tide.drain_node() and shrink it once enough of its work is done.';
    END IF;
    IF NOT (tide._all_gpus(tide.get(NEW.capacity, 'gpu')) OPERATOR(tide.@>) busy) THEN
        RAISE EXCEPTION 'node "%" would lose GPUs in use (%)', tide._cut(OLD.name), busy
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
-- R-C4 over some nodes: what their live allocations hold, with the rows
-- add_* (allocations about to be inserted), fits their capacity; no GPU is
-- given whole twice; the shares of one GPU add up to at most 1000 and no
-- whole allocation holds that GPU; every GPU is on the node.  One row per
-- broken rule of a node.  Read in the caller's snapshot: callers lock the
-- nodes first (FOR NO KEY UPDATE, in name order) and take the snapshot
-- after, so nothing they do not see can be added to those nodes.
CREATE FUNCTION tide._overcommitted(nodes text[], add_node text[], add_resources tide.resvec[],
                                    add_gpus tide.gpumask[], add_milli integer[])
    RETURNS TABLE (node text, problem text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
    WITH held_rows AS MATERIALIZED (
        SELECT a.node, a.resources, a.gpus, a.gpu_milli
          FROM tide.allocations a
         WHERE a.node IN (SELECT unnest(nodes)) AND a.state <> 'released'
        UNION ALL
        SELECT u.node, u.resources, u.gpus, u.gpu_milli
          FROM unnest(add_node, add_resources, add_gpus, add_milli) AS u(node, resources, gpus, gpu_milli)),
    live AS (
        SELECT r.node,
               tide.sum(r.resources) AS held,
               tide.union(r.gpus) FILTER (WHERE r.gpu_milli IS NULL) AS whole,
               sum(tide.gpu_count(r.gpus)) FILTER (WHERE r.gpu_milli IS NULL) AS whole_count,
               tide.union(r.gpus) AS used
          FROM held_rows r
         GROUP BY r.node)
    SELECT l.node,
           CASE WHEN nd.name IS NULL
                    THEN 'it is not in tide.nodes'
                WHEN NOT (nd.capacity OPERATOR(tide.@>) l.held)
                    THEN format('live allocations hold %s, capacity is %s', l.held, nd.capacity)
                WHEN coalesce(l.whole_count, 0) <> tide.gpu_count(coalesce(l.whole, ''::tide.gpumask))
                    THEN 'a GPU is given to two allocations'
                ELSE format('GPUs %s are not all on the node', l.used)
           END
      FROM live l LEFT JOIN tide.nodes nd ON nd.name = l.node
     WHERE nd.name IS NULL
        OR NOT (nd.capacity OPERATOR(tide.@>) l.held)
        OR coalesce(l.whole_count, 0) <> tide.gpu_count(coalesce(l.whole, ''::tide.gpumask))
        OR NOT (tide._all_gpus(tide.get(nd.capacity, 'gpu')) OPERATOR(tide.@>) l.used)
    UNION ALL
    SELECT f.node, format('GPU %s is shared beyond one GPU or also given whole', f.gpu)
      FROM (SELECT r.node, r.gpus::text AS gpu, sum(r.gpu_milli) AS milli
              FROM held_rows r
             WHERE r.gpu_milli IS NOT NULL
             GROUP BY r.node, r.gpus::text) f
      JOIN live l ON l.node = f.node
     WHERE f.milli > 1000
        OR coalesce(l.whole OPERATOR(tide.&&) f.gpu::tide.gpumask, false)
$$;
COMMENT ON FUNCTION tide._overcommitted(text[], text[], tide.resvec[], tide.gpumask[], integer[]) IS
    'the R-C4 check of some nodes (their live allocations and rows about to be added): one row per broken rule; callers lock the nodes first';
REVOKE ALL ON FUNCTION tide._overcommitted(text[], text[], tide.resvec[], tide.gpumask[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._overcommitted(text[], text[], tide.resvec[], tide.gpumask[], integer[]) TO tide_admin;

CREATE FUNCTION tide._overcommitted_now(nodes text[], OUT node text, OUT problem text)
    LANGUAGE c VOLATILE STRICT
    AS 'MODULE_PATHNAME', 'tide_overcommitted_now';
COMMENT ON FUNCTION tide._overcommitted_now(text[]) IS
    'the first of the nodes (by name) that breaks R-C4 and how, in the latest snapshot (for the allocations'' insert trigger, which holds the node rows)';
REVOKE ALL ON FUNCTION tide._overcommitted_now(text[]) FROM PUBLIC;

-- R-C4 for a writer other than the cycle (whose own inserts run without
-- triggers: src/cycle_guard.c): lock the nodes, in name order (as the cycle
-- does), so that no other insert, capacity change or drain of them runs
-- until this transaction ends; then check them in a snapshot taken after
-- the locks (the latest: also in REPEATABLE READ).  For the allocations'
-- triggers, which run as the owner.
CREATE FUNCTION tide._refuse_overcommit(nodes text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM 1 FROM tide.nodes nd
      WHERE nd.name = ANY (nodes)
      ORDER BY nd.name
        FOR NO KEY UPDATE OF nd;
    SELECT o.node, o.problem INTO bad FROM tide._overcommitted_now(nodes) o;
    IF bad.node IS NOT NULL THEN
        RAISE EXCEPTION 'node "%" would be overcommitted: %', bad.node, bad.problem
            USING ERRCODE = 'check_violation',
                  HINT = 'Live allocations (assigned, running, releasing) of a node must fit in its capacity and never share a GPU (R-C4).';
    END IF;
END
$$;
COMMENT ON FUNCTION tide._refuse_overcommit(text[]) IS
    'locks the nodes in name order and refuses (R-C4) if their live allocations overcommit one, in the latest snapshot; for the allocations'' triggers';
REVOKE ALL ON FUNCTION tide._refuse_overcommit(text[]) FROM PUBLIC;

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
    -- The cycle's own insert, which fires no trigger, has checked more: its
    -- jobs' tasks are those it loaded, and cannot change (src/cycle_place.c).
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
    -- R-C4 over the nodes touched, for every writer but the cycle.
    PERFORM tide._refuse_overcommit(ARRAY(SELECT DISTINCT n.node FROM new_allocations n));

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

-- R-T6: the moment the database decides to stop an allocation (it becomes
-- releasing, or is released without an exit: an eviction, a cancel, a
-- failed gang member, a lost node, whoever writes it) is kept on the row,
-- so that an exit its launcher reports later, as having happened before,
-- counts as the exit.  A row trigger, but one that runs only for the rows
-- being stopped (its WHEN clause), never for starts and exits.
-- clock_timestamp(): the moment the decision is written, not the start of
-- its transaction (a cycle's may be long).
CREATE FUNCTION tide._allocations_release_decided() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    NEW.release_decided_at := pg_catalog.clock_timestamp();
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._allocations_release_decided() IS
    'trigger: records when the database decided to stop an allocation (it became releasing, or released without an exit) in release_decided_at (R-T6)';
CREATE TRIGGER allocations_release_decided BEFORE UPDATE OF state ON tide.allocations
    FOR EACH ROW
    WHEN (OLD.state IN ('assigned', 'running') AND NEW.state IN ('releasing', 'released')
          AND NEW.release_reason IS DISTINCT FROM 'exited' AND NEW.release_decided_at IS NULL)
    EXECUTE FUNCTION tide._allocations_release_decided();

CREATE FUNCTION tide._allocations_after_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
    changed bigint[];
    failed bigint[];
    lost bigint[];
    regrown text[];
BEGIN
    -- Dynamic SQL: planned for this statement's transition table sizes.
    EXECUTE $q$
        SELECT o.id, o.state AS old_state, n.state AS new_state
          FROM old_allocations o JOIN new_allocations n ON n.id = o.id
         WHERE (o.state <> n.state
                AND NOT EXISTS (SELECT 1 FROM tide.allocation_transitions t
                                 WHERE t.old_state = o.state AND t.new_state = n.state))
            OR (o.state = 'released'
                AND (o.exit_code, o.released_at, o.release_reason, o.exit_reason, o.node, o.job_id,
                     o.release_decided_at, o.exited_at)
                    IS DISTINCT FROM (n.exit_code, n.released_at, n.release_reason, n.exit_reason, n.node, n.job_id,
                                      n.release_decided_at, n.exited_at)
                -- but a late exit (tide._late_exits) adds the exit code of
                -- one released without it, and says so in its reason
                AND NOT (o.exit_code IS NULL AND n.exit_code IS NOT NULL AND n.state = 'released'
                         AND (o.released_at, o.exit_reason, o.node, o.job_id, o.release_decided_at, o.exited_at)
                             IS NOT DISTINCT FROM (n.released_at, n.exit_reason, n.node, n.job_id, n.release_decided_at, n.exited_at)
                         AND n.release_reason IS NOT DISTINCT FROM tide._late_exit_reason(o.release_reason, n.exit_code)))
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

    -- The jobs whose allocations changed state, and the nodes on which a
    -- live allocation changed what it holds (moved there, or other
    -- resources, GPUs or share: an administrator's correction).
    EXECUTE $q$
        SELECT pg_catalog.array_agg(DISTINCT n.job_id) FILTER (WHERE o.state <> n.state),
               pg_catalog.array_agg(n.id) FILTER (WHERE n.state = 'released' AND n.exit_code <> 0
                                                   AND n.release_reason = 'exited' AND o.state <> n.state),
               pg_catalog.array_agg(n.id) FILTER (WHERE n.state = 'released' AND o.state IN ('assigned', 'running')
                                                   AND n.release_reason IS DISTINCT FROM 'exited'),
               pg_catalog.array_agg(DISTINCT n.node) FILTER (WHERE regrown)
          FROM old_allocations o JOIN new_allocations n ON n.id = o.id,
               LATERAL (SELECT n.state <> 'released'
                               AND (o.node <> n.node
                                    OR NOT (o.resources OPERATOR(tide.=) n.resources)
                                    OR NOT (o.gpus OPERATOR(tide.=) n.gpus)
                                    OR o.gpu_milli IS DISTINCT FROM n.gpu_milli) AS regrown) g
         WHERE o.state <> n.state OR g.regrown $q$ INTO changed, failed, lost, regrown;
    -- R-C4 for those nodes, as the insert trigger checks new allocations.
    IF regrown IS NOT NULL THEN
        PERFORM tide._refuse_overcommit(regrown);
    END IF;
    IF changed IS NOT NULL THEN
        PERFORM tide._rollup_jobs(changed, coalesce(failed, '{}'), coalesce(lost, '{}'));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._allocations_after_update() IS
    'statement trigger: refuses allocation state changes not in tide.allocation_transitions and any change of a released one, refuses a live allocation changed in place so that its node would be overcommitted (R-C4), notifies launchers of new evictions, and rolls job states up';
CREATE TRIGGER allocations_after_update AFTER UPDATE ON tide.allocations
    REFERENCING OLD TABLE AS old_allocations NEW TABLE AS new_allocations
    FOR EACH STATEMENT EXECUTE FUNCTION tide._allocations_after_update();
