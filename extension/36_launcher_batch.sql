-- Set-based launcher reports: tide.started(bigint[]), tide.exited(bigint[],
-- integer[]), tide.evicted(bigint[]).
--
-- A launcher that starts or reaps many allocations at once reports them in
-- one call: one UPDATE of tide.allocations, so the allocation triggers (the
-- transition check and the job roll-up of 25_state_machine.sql) run once per
-- batch instead of once per allocation.  Each call means the same as calling
-- the single-row function of 35_launcher_api.sql for every element, in array
-- order, in one transaction, and checks the same things:
--
--   * every id exists and belongs to a node the caller may act for
--     (tide._may_launch); otherwise the first such id, in array order, is
--     named in the error, before anything is locked;
--   * jobs are locked before allocations, both in id order (no deadlock
--     with another batch, tide.cancel or the cycle);
--   * a state the single-row call refuses is refused, naming the first such
--     id in array order; the whole batch then changes nothing;
--   * repeats (an allocation already in the reported state, or an id given
--     twice) change nothing and are counted in one NOTICE;
--   * a NULL id or exit code, a NULL array, a multi-dimensional array and
--     arrays of different lengths are errors.
--
-- Like the single-row calls they run with the caller's rights (row-level
-- security applies to the UPDATE); only the lookup and locking helper is
-- SECURITY DEFINER, so that an id of another node is told apart from one
-- that does not exist.

-- Checks the ids, then locks their jobs and the allocations (jobs first)
-- and returns the locked allocations in id order.
CREATE FUNCTION tide._launcher_targets(allocation_ids bigint[], who text) RETURNS SETOF tide.allocations
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM tide._assert_acting_as(who);
    IF allocation_ids IS NULL THEN
        RAISE EXCEPTION 'allocation_ids must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an array of allocation ids; ''{}'' reports nothing.';
    END IF;
    IF pg_catalog.array_ndims(allocation_ids) > 1 THEN
        RAISE EXCEPTION 'allocation_ids must be a one-dimensional array, not % dimensions',
                pg_catalog.array_ndims(allocation_ids)
            USING ERRCODE = 'array_subscript_error';
    END IF;

    -- The first id, in array order, that does not exist or that belongs to a
    -- node the caller may not act for (one permission check per node).
    WITH u AS (
        SELECT x.id, x.ord, a.node
          FROM unnest(allocation_ids) WITH ORDINALITY AS x(id, ord)
          LEFT JOIN tide.allocations a ON a.id = x.id
    ), allowed AS (
        SELECT d.node, coalesce(tide._may_launch(d.node, who), false) AS ok
          FROM (SELECT DISTINCT u.node FROM u WHERE u.node IS NOT NULL) d
    )
    SELECT u.id, u.node INTO bad
      FROM u LEFT JOIN allowed p ON p.node = u.node
     WHERE u.node IS NULL OR NOT p.ok
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        IF bad.node IS NULL THEN
            RAISE EXCEPTION 'allocation % does not exist', coalesce(bad.id::text, 'NULL')
                USING ERRCODE = 'undefined_object';
        END IF;
        RAISE EXCEPTION 'allocation % belongs to node "%", which role "%" may not act for', bad.id, bad.node, who
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A launcher reports only on the allocations of its own node.';
    END IF;

    -- Lock order: jobs, then allocations, each in id order.
    PERFORM 1 FROM tide.jobs j
     WHERE j.id IN (SELECT a.job_id FROM tide.allocations a WHERE a.id = ANY (allocation_ids))
     ORDER BY j.id
       FOR NO KEY UPDATE OF j;
    RETURN QUERY
        SELECT a.* FROM tide.allocations a
         WHERE a.id = ANY (allocation_ids)
         ORDER BY a.id
           FOR UPDATE OF a;
END
$$;
COMMENT ON FUNCTION tide._launcher_targets(bigint[], text) IS
    'for the set-based launcher calls: checks that every id exists and that the role may act for its node (naming the first bad one), locks their jobs and then the allocations, and returns the allocations';

-- The NOTICE of a batch in which some reports changed nothing: ids that
-- were already in the reported state, and second mentions of an id.
CREATE FUNCTION tide._batch_notice(allocation_ids bigint[], changed bigint, already bigint[], what text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    repeated bigint[];
BEGIN
    IF changed >= pg_catalog.cardinality(allocation_ids) THEN
        RETURN;
    END IF;
    SELECT pg_catalog.array_agg(r.id ORDER BY r.ord) INTO repeated
      FROM (SELECT x.id, x.ord,
                   pg_catalog.row_number() OVER (PARTITION BY x.id ORDER BY x.ord) AS mention
              FROM unnest(allocation_ids) WITH ORDINALITY AS x(id, ord)) r
     WHERE r.mention > 1 OR r.id = ANY (already);
    RAISE NOTICE '% of % allocations %; nothing changed for them',
            pg_catalog.cardinality(allocation_ids) - changed, pg_catalog.cardinality(allocation_ids), what
        USING DETAIL = pg_catalog.format('Allocations: %s%s.',
                           pg_catalog.array_to_string(repeated[1:20], ', '),
                           CASE WHEN pg_catalog.cardinality(repeated) > 20 THEN ', ...' ELSE '' END);
END
$$;
COMMENT ON FUNCTION tide._batch_notice(bigint[], bigint, bigint[], text) IS
    'raises the NOTICE of a set-based launcher call in which some reports changed nothing (how many, and the first 20 such ids in array order)';

CREATE FUNCTION tide.started(allocation_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n bigint;
    refused bigint[];
    running bigint[];
    bad record;
    changed bigint;
BEGIN
    SELECT pg_catalog.count(*),
           pg_catalog.array_agg(t.id) FILTER (WHERE t.state NOT IN ('assigned', 'running')),
           pg_catalog.array_agg(t.id) FILTER (WHERE t.state = 'running')
      INTO n, refused, running
      FROM tide._launcher_targets(started.allocation_ids, CURRENT_USER) AS t;
    IF n = 0 THEN
        RETURN;                 -- an empty array reports nothing
    END IF;
    IF refused IS NOT NULL THEN
        SELECT x.id, a.state INTO bad
          FROM unnest(started.allocation_ids) WITH ORDINALITY AS x(id, ord)
          JOIN tide.allocations a ON a.id = x.id
         WHERE x.id = ANY (refused)
         ORDER BY x.ord
         LIMIT 1;
        RAISE EXCEPTION 'allocation % is %, so it cannot start', bad.id, bad.state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = CASE bad.state WHEN 'releasing'
                              THEN 'It is being evicted: stop it and report with tide.evicted().'
                              ELSE 'It is over; claim new work with tide.claim().' END;
    END IF;

    UPDATE tide.allocations x SET state = 'running', started_at = pg_catalog.now()
     WHERE x.id = ANY (started.allocation_ids) AND x.state = 'assigned';
    GET DIAGNOSTICS changed = ROW_COUNT;
    PERFORM tide._batch_notice(started.allocation_ids, changed, running, 'were already started');
END
$$;
COMMENT ON FUNCTION tide.started(bigint[]) IS
    'the launcher started these allocations'' processes: assigned -> running, in one statement (the allocation triggers run once); the same checks as tide.started(bigint) for every id, all or nothing';

CREATE FUNCTION tide.exited(allocation_ids bigint[], exit_codes integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n bigint;
    released bigint[];
    bad record;
    changed bigint;
BEGIN
    IF exited.exit_codes IS NULL THEN
        RAISE EXCEPTION 'exit_codes must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass one exit code per allocation id.';
    END IF;
    IF pg_catalog.array_ndims(exited.exit_codes) > 1 THEN
        RAISE EXCEPTION 'exit_codes must be a one-dimensional array, not % dimensions',
                pg_catalog.array_ndims(exited.exit_codes)
            USING ERRCODE = 'array_subscript_error';
    END IF;
    IF exited.allocation_ids IS NOT NULL
       AND pg_catalog.cardinality(exited.allocation_ids) <> pg_catalog.cardinality(exited.exit_codes) THEN
        RAISE EXCEPTION 'allocation_ids has % elements but exit_codes has %',
                pg_catalog.cardinality(exited.allocation_ids), pg_catalog.cardinality(exited.exit_codes)
            USING ERRCODE = 'array_subscript_error',
                  HINT = 'Pass one exit code per allocation id, in the same order.';
    END IF;
    SELECT x.ord, a.id INTO bad
      FROM unnest(exited.exit_codes) WITH ORDINALITY AS x(code, ord)
      LEFT JOIN unnest(exited.allocation_ids) WITH ORDINALITY AS a(id, ord) ON a.ord = x.ord
     WHERE x.code IS NULL
     ORDER BY x.ord
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'exit code % (for allocation %) must not be NULL', bad.ord, coalesce(bad.id::text, 'NULL')
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Report the process''s exit status; a process killed by signal N exits 128+N.';
    END IF;

    SELECT pg_catalog.count(*), pg_catalog.array_agg(t.id) FILTER (WHERE t.state = 'released')
      INTO n, released
      FROM tide._launcher_targets(exited.allocation_ids, CURRENT_USER) AS t;
    IF n = 0 THEN
        RETURN;
    END IF;

    -- Every state but released may exit; an id given twice: the first
    -- mention wins, as if the calls were made one by one.
    UPDATE tide.allocations x
       SET state = 'released', exit_code = d.code, released_at = pg_catalog.now(),
           release_reason = 'exited'
      FROM (SELECT DISTINCT ON (u.id) u.id, u.code
              FROM unnest(exited.allocation_ids, exited.exit_codes) WITH ORDINALITY AS u(id, code, ord)
             ORDER BY u.id, u.ord) d
     WHERE x.id = d.id AND x.state <> 'released';
    GET DIAGNOSTICS changed = ROW_COUNT;
    PERFORM tide._batch_notice(exited.allocation_ids, changed, released, 'were already released');
END
$$;
COMMENT ON FUNCTION tide.exited(bigint[], integer[]) IS
    'these allocations'' processes ended with these exit codes (one per id, in order): released, in one statement; a non-zero code fails its job (the rest of the gang is evicted); the same checks as tide.exited(bigint, integer) for every id, all or nothing';

CREATE FUNCTION tide.evicted(allocation_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n bigint;
    refused bigint[];
    released bigint[];
    bad record;
    changed bigint;
BEGIN
    SELECT pg_catalog.count(*),
           pg_catalog.array_agg(t.id) FILTER (WHERE t.state NOT IN ('releasing', 'released')),
           pg_catalog.array_agg(t.id) FILTER (WHERE t.state = 'released')
      INTO n, refused, released
      FROM tide._launcher_targets(evicted.allocation_ids, CURRENT_USER) AS t;
    IF n = 0 THEN
        RETURN;
    END IF;
    IF refused IS NOT NULL THEN
        SELECT x.id, a.state INTO bad
          FROM unnest(evicted.allocation_ids) WITH ORDINALITY AS x(id, ord)
          JOIN tide.allocations a ON a.id = x.id
         WHERE x.id = ANY (refused)
         ORDER BY x.ord
         LIMIT 1;
        RAISE EXCEPTION 'allocation % is %, not being evicted', bad.id, bad.state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Report a process that ended on its own with tide.exited(allocation_id, exit_code).';
    END IF;

    UPDATE tide.allocations x
       SET state = 'released', released_at = pg_catalog.now(),
           release_reason = coalesce(x.release_reason, 'evicted')
     WHERE x.id = ANY (evicted.allocation_ids) AND x.state = 'releasing';
    GET DIAGNOSTICS changed = ROW_COUNT;
    PERFORM tide._batch_notice(evicted.allocation_ids, changed, released, 'were already released');
END
$$;
COMMENT ON FUNCTION tide.evicted(bigint[]) IS
    'the launcher stopped these evicted allocations: releasing -> released, in one statement, freeing their resources; the same checks as tide.evicted(bigint) for every id, all or nothing';

-- Privileges, as for the single-row calls (40_roles.sql).
REVOKE ALL ON FUNCTION
    tide._launcher_targets(bigint[], text),
    tide._batch_notice(bigint[], bigint, bigint[], text),
    tide.started(bigint[]),
    tide.exited(bigint[], integer[]),
    tide.evicted(bigint[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tide._launcher_targets(bigint[], text),
    tide._batch_notice(bigint[], bigint, bigint[], text),
    tide.started(bigint[]),
    tide.exited(bigint[], integer[]),
    tide.evicted(bigint[])
    TO tide_launcher, tide_admin;
