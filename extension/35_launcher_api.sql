-- The launcher's API: one launcher serves one node (R-C3).
--
-- Which roles may act for a node: members of tide_admin always; when
-- tide.nodes.launcher_role is set, members of that role; otherwise members of
-- tide_launcher.  The functions run with the caller's rights: the row-level
-- security of 40_roles.sql applies the same rule to the launcher's UPDATEs,
-- and the job roll-up is done by the allocation triggers.  Every call is
-- idempotent.  The reports (started, exited, evicted) are in
-- 36_launcher_batch.sql.

-- No SET clause, so that the planner inlines it (the cycle notifies every
-- node that got work); every name in it is qualified instead.
CREATE FUNCTION tide.node_channel(node text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT 'tide_node_' OPERATOR(pg_catalog.||) pg_catalog.md5(node) $$;
COMMENT ON FUNCTION tide.node_channel(text) IS
    'the NOTIFY channel of a node''s launcher: tide_node_ followed by the md5 of the node name (42 bytes, a safe identifier for any name); LISTEN on it';

-- May role "who" act as the launcher of node?  SECURITY DEFINER so that it
-- can be used inside row-level security policies without recursion.  The
-- policies pass CURRENT_USER; anyone else asking about a role the session
-- cannot act as gets false, not an answer about that role (through
-- _launches_job it would tell whether another owner's job was placed).
CREATE FUNCTION tide._may_launch(node text, who text) RETURNS boolean
    LANGUAGE sql STABLE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE
         WHEN NOT (who = SESSION_USER OR pg_catalog.pg_has_role(SESSION_USER, who, 'MEMBER')) THEN false
         WHEN pg_catalog.pg_has_role(who, 'tide_admin', 'MEMBER') THEN true
         WHEN n.launcher_role IS NULL THEN pg_catalog.pg_has_role(who, 'tide_launcher', 'MEMBER')
         ELSE EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
                       WHERE r.rolname = n.launcher_role
                         AND pg_catalog.pg_has_role(who, r.oid, 'MEMBER'))
       END
  FROM tide.nodes n
 WHERE n.name = node
$$;
COMMENT ON FUNCTION tide._may_launch(text, text) IS
    'may the role act as the launcher of the node: tide_admin members always, else members of nodes.launcher_role when set, else members of tide_launcher; false for a role the session cannot act as';

CREATE FUNCTION tide._launches_job(job_id bigint, who text) RETURNS boolean
    LANGUAGE sql STABLE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT EXISTS (SELECT 1 FROM tide.allocations a
                WHERE a.job_id = _launches_job.job_id
                  AND tide._may_launch(a.node, who))
$$;
COMMENT ON FUNCTION tide._launches_job(bigint, text) IS
    'has the job an allocation on a node the role may launch for (what lets a launcher read the job''s command)';

-- The SECURITY DEFINER helpers below take the acting role as an argument
-- (inside them CURRENT_USER is the owner).  A caller could name a role it
-- is not, so each first checks that the session may act as that role: it
-- is the session's own role, one it may SET ROLE to, or the session is a
-- superuser's.
CREATE FUNCTION tide._assert_acting_as(who text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF who IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = who)
       OR NOT pg_catalog.pg_has_role(SESSION_USER, who, 'MEMBER') THEN
        RAISE EXCEPTION 'session role "%" may not act as role "%"', SESSION_USER, coalesce(tide._cut(who), 'NULL')
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Call the public functions (tide.started, tide.explain, ...), which pass your own role.';
    END IF;
END
$$;
COMMENT ON FUNCTION tide._assert_acting_as(text) IS
    'raises unless the session may act as the named role (its own, one it may SET ROLE to, or any for a superuser); guards the SECURITY DEFINER launcher helpers';

-- Checks that the caller may act for the node; returns its state.
CREATE FUNCTION tide._check_launcher(node text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
    lrole text;
BEGIN
    SELECT s.state, s.launcher_role INTO st, lrole FROM tide._node_info(node) s;
    IF st IS NULL THEN
        RAISE EXCEPTION 'node "%" does not exist', tide._cut(node)
            USING ERRCODE = 'undefined_object',
                  HINT = 'An administrator registers nodes with tide.register_node().';
    END IF;
    IF NOT tide._may_launch(node, CURRENT_USER) THEN
        RAISE EXCEPTION 'role "%" may not act for node "%"', CURRENT_USER, tide._cut(node)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = CASE WHEN lrole IS NULL
                              THEN 'Launchers are members of tide_launcher.'
                              ELSE pg_catalog.format('Node %s accepts only members of role %s (tide.nodes.launcher_role).', node, lrole) END;
    END IF;
    RETURN st;
END
$$;
COMMENT ON FUNCTION tide._check_launcher(text) IS
    'raises unless the node exists and the current role may act as its launcher; returns the node state';

CREATE FUNCTION tide._node_info(node text, OUT state text, OUT launcher_role text)
    LANGUAGE sql STABLE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT n.state, n.launcher_role FROM tide.nodes n WHERE n.name = node $$;
COMMENT ON FUNCTION tide._node_info(text) IS 'state and launcher_role of a node, whatever the caller may read';

CREATE FUNCTION tide.claim(node text) RETURNS SETOF tide.allocations
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._check_launcher(claim.node);
    UPDATE tide.allocations a SET claimed_at = pg_catalog.now()
     WHERE a.node = claim.node AND a.state = 'assigned' AND a.claimed_at IS NULL;
    RETURN QUERY
        SELECT a.* FROM tide.allocations a
         WHERE a.node = claim.node AND a.state = 'assigned'
         ORDER BY a.id;
END
$$;
COMMENT ON FUNCTION tide.claim(text) IS
    'the assigned allocations of the node, oldest first, to start (idempotent: a launcher that reconnects claims again); marks them claimed';

CREATE FUNCTION tide.claim_evictions(node text) RETURNS SETOF tide.allocations
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._check_launcher(claim_evictions.node);
    RETURN QUERY
        SELECT a.* FROM tide.allocations a
         WHERE a.node = claim_evictions.node AND a.state = 'releasing'
         ORDER BY a.id;
END
$$;
COMMENT ON FUNCTION tide.claim_evictions(text) IS
    'the allocations of the node to stop (state releasing), oldest first; report each with tide.evicted (idempotent)';

CREATE FUNCTION tide.heartbeat(node text) RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    st := tide._check_launcher(heartbeat.node);
    UPDATE tide.nodes n SET heartbeat_at = pg_catalog.now() WHERE n.name = heartbeat.node;
    IF st = 'down' THEN
        st := tide._node_back(heartbeat.node);
    END IF;
    RETURN st;
END
$$;
COMMENT ON FUNCTION tide.heartbeat(text) IS
    'the node''s launcher is alive: sets heartbeat_at; a node the cycle lost returns to its state before (ready or draining); returns the node state (ready, draining, down)';

-- A node lost by the cycle whose launcher speaks again returns as it was:
-- its work was released when it was lost (the launcher stops what still
-- runs of it), so it comes back empty.  A node an administrator set down
-- stays down.  SECURITY DEFINER: launchers may not change node states.
CREATE FUNCTION tide._node_back(node text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    UPDATE tide.nodes n SET state = n.state_before_down
     WHERE n.name = _node_back.node AND n.state = 'down' AND n.down_reason = 'lost';
    SELECT n.state INTO st FROM tide.nodes n WHERE n.name = _node_back.node;
    RETURN st;
END
$$;
COMMENT ON FUNCTION tide._node_back(text) IS
    'for tide.heartbeat: a node the cycle marked down (lost) returns to its state before; one set down by an administrator stays down; returns the state';
