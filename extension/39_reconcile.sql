-- R-C7: a launcher and the database agree on what runs on its node.
--
-- Each time a launcher connects (its start, every reconnect: a failover, a
-- restart of the server, a network cut), it tells the database every
-- allocation it knows, by id, job and token (tide.allocations.token: ids
-- can be handed out again after an asynchronous failover, tokens cannot),
-- and the database answers for each, and mends its own side:
--
--   keep      a live allocation of this node (assigned, running or
--             releasing) with that id, job and token: go on; gpus and
--             gpu_milli say what it holds (a restarted launcher learns the
--             GPUs of adopted work from them)
--   stop      no live allocation of this node is that one (it does not
--             exist, it was released, its id now names another
--             allocation, or another node's): the process has nothing
--             behind it; stop it (its exit, if any, may still be reported)
--   released  the database had this live allocation of the node running
--             (or being stopped), and the launcher does not run it: it is
--             released now, as lost (R-C3: its job is retried with retries
--             left, else its on_evict); one being stopped is released as
--             evicted
--
-- Assigned allocations the launcher does not know are left alone: they
-- are work to start, which the next claim returns.  A NULL token matches
-- any token of that id and job (records of launchers that kept no token).
-- Everything else the launcher does stays as it was: claims, the reports
-- (which carry the tokens, 36_launcher_batch.sql), the per-claim check of
-- what the database released.

CREATE FUNCTION tide._reconcile(node text, allocation_ids bigint[], job_ids bigint[], tokens uuid[], who text)
    RETURNS TABLE(allocation_id bigint, job_id bigint, action text, reason text, token uuid,
                  gpus text, gpu_milli integer)
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ghosts bigint[];
    was text[];
BEGIN
    PERFORM tide._assert_acting_as(who);
    IF NOT coalesce(tide._may_launch(node, who), false) THEN
        RAISE EXCEPTION 'role "%" may not act for node "%"', tide._cut(who), tide._cut(node)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF allocation_ids IS NULL OR job_ids IS NULL OR tokens IS NULL THEN
        RAISE EXCEPTION 'allocation_ids, job_ids and tokens must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass the allocations the launcher runs; ''{}'' for none.';
    END IF;
    IF pg_catalog.array_ndims(allocation_ids) > 1 OR pg_catalog.array_ndims(job_ids) > 1
       OR pg_catalog.array_ndims(tokens) > 1 THEN
        RAISE EXCEPTION 'allocation_ids, job_ids and tokens must be one-dimensional arrays'
            USING ERRCODE = 'array_subscript_error';
    END IF;
    IF pg_catalog.cardinality(job_ids) <> pg_catalog.cardinality(allocation_ids)
       OR pg_catalog.cardinality(tokens) <> pg_catalog.cardinality(allocation_ids) THEN
        RAISE EXCEPTION 'allocation_ids has % elements, job_ids % and tokens %',
                pg_catalog.cardinality(allocation_ids), pg_catalog.cardinality(job_ids),
                pg_catalog.cardinality(tokens)
            USING ERRCODE = 'array_subscript_error',
                  HINT = 'Pass one job id and one token (or NULL) per allocation id, in the same order.';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(allocation_ids, job_ids) AS m(id, job) WHERE m.id IS NULL OR m.job IS NULL) THEN
        RAISE EXCEPTION 'allocation_ids and job_ids must not contain NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;

    -- The node's work that the database counts as running (or being
    -- stopped) and the launcher does not run.  Jobs first, then the
    -- allocations, each in id order (the lock order of every writer).
    SELECT pg_catalog.array_agg(a.id ORDER BY a.id) INTO ghosts
      FROM tide.allocations a
     WHERE a.node = _reconcile.node AND a.state IN ('running', 'releasing')
       AND NOT EXISTS (SELECT 1 FROM unnest(allocation_ids, job_ids, tokens) AS m(id, job, token)
                        WHERE m.id = a.id AND m.job = a.job_id
                          AND (m.token IS NULL OR m.token = a.token));
    IF ghosts IS NOT NULL THEN
        PERFORM 1 FROM tide.jobs j
         WHERE j.id IN (SELECT a.job_id FROM tide.allocations a WHERE a.id = ANY (ghosts))
         ORDER BY j.id
           FOR NO KEY UPDATE OF j;
        -- locked, and read again: what is still running or being stopped
        SELECT pg_catalog.array_agg(x.id ORDER BY x.id), pg_catalog.array_agg(x.state ORDER BY x.id)
          INTO ghosts, was
          FROM (SELECT a.id, a.state FROM tide.allocations a
                 WHERE a.id = ANY (ghosts) AND a.state IN ('running', 'releasing')
                 ORDER BY a.id
                   FOR UPDATE OF a) x;
        -- (a running one released without an exit is a lost replica: the
        -- roll-up retries its job or applies its on_evict, 26_rollup.sql)
        UPDATE tide.allocations a
           SET state = 'released', released_at = pg_catalog.now(),
               release_reason = CASE a.state
                                    WHEN 'releasing' THEN coalesce(a.release_reason, 'evicted')
                                    ELSE 'its launcher does not run it (reconciled when the launcher connected)'
                                END
         WHERE a.id = ANY (ghosts);
    END IF;

    RETURN QUERY
        SELECT m.id, m.job,
               CASE WHEN a.id IS NOT NULL AND a.node = _reconcile.node AND a.job_id = m.job
                         AND (m.token IS NULL OR m.token = a.token) AND a.state <> 'released'
                    THEN 'keep' ELSE 'stop' END,
               CASE WHEN a.id IS NULL OR a.node <> _reconcile.node
                    THEN pg_catalog.format('allocation %s does not exist on node %s (lost in a failover?)', m.id, _reconcile.node)
                    WHEN a.job_id <> m.job OR m.token <> a.token
                    THEN pg_catalog.format('allocation %s is another allocation now (of job %s): the one of job %s that runs here was lost, e.g. in an asynchronous failover',
                                           m.id, a.job_id, m.job)
                    WHEN a.state = 'released'
                    THEN pg_catalog.format('allocation %s was released (%s)', m.id, coalesce(a.release_reason, 'no reason'))
               END,
               CASE WHEN a.node = _reconcile.node AND a.job_id = m.job AND m.token IS NULL THEN a.token ELSE m.token END,
               CASE WHEN a.node = _reconcile.node AND a.job_id = m.job AND (m.token IS NULL OR m.token = a.token)
                    THEN coalesce(tide.cuda_visible_devices(a.gpus), '') END,
               CASE WHEN a.node = _reconcile.node AND a.job_id = m.job AND (m.token IS NULL OR m.token = a.token)
                    THEN a.gpu_milli END
          FROM unnest(allocation_ids, job_ids, tokens) WITH ORDINALITY AS m(id, job, token, ord)
          LEFT JOIN tide.allocations a ON a.id = m.id
         ORDER BY m.ord;
    RETURN QUERY
        SELECT a.id, a.job_id, 'released',
               pg_catalog.format('allocation %s of job %s was %s on node %s in the database, but its launcher does not run it: released (%s)',
                                 a.id, a.job_id,
                                 CASE g.state WHEN 'running' THEN 'running' ELSE 'being stopped' END, a.node,
                                 CASE g.state WHEN 'running' THEN 'its job is handled as lost' ELSE 'as evicted' END),
               a.token, NULL::text, NULL::integer
          FROM unnest(ghosts, was) AS g(id, state)
          JOIN tide.allocations a ON a.id = g.id
         ORDER BY a.id;
END
$$;
COMMENT ON FUNCTION tide._reconcile(text, bigint[], bigint[], uuid[], text) IS
    'the work of tide.reconcile, as the acting role (checked): releases the node''s running or releasing allocations the launcher does not run, and answers for each allocation it runs (R-C7)';

CREATE FUNCTION tide.reconcile(node text, allocation_ids bigint[], job_ids bigint[], tokens uuid[])
    RETURNS TABLE(allocation_id bigint, job_id bigint, action text, reason text, token uuid,
                  gpus text, gpu_milli integer)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._check_launcher(reconcile.node);
    RETURN QUERY SELECT * FROM tide._reconcile(reconcile.node, allocation_ids, job_ids, tokens, CURRENT_USER);
END
$$;
COMMENT ON FUNCTION tide.reconcile(text, bigint[], bigint[], uuid[]) IS
    'a launcher tells which allocations it runs (ids, their jobs and tokens; a NULL token matches any): one row per allocation, keep (a live allocation of the node, with its GPUs) or stop (none: stop the process), then one released row per allocation of the node the database had running or being stopped that the launcher does not run, released now (running ones as lost, R-C3); call it on every connect (R-C7)';

REVOKE ALL ON FUNCTION
    tide._reconcile(text, bigint[], bigint[], uuid[], text),
    tide.reconcile(text, bigint[], bigint[], uuid[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tide._reconcile(text, bigint[], bigint[], uuid[], text),
    tide.reconcile(text, bigint[], bigint[], uuid[])
    TO tide_launcher, tide_admin;
