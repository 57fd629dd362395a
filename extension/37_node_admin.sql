-- An administrator takes a node out now (docs/policy.md R-C3): its live
-- allocations are released with the reason and their jobs handled as for
-- a lost node (retried with retries left, else as on_evict says), its
-- launcher woken to stop whatever still runs there.  tide.down_node says
-- why; a plain UPDATE of tide.nodes.state to 'down' does the same with a
-- reason of its own, so that no way of setting a node down leaves work
-- running on it that the database still counts.  tide.resume_node brings
-- it back (30_api.sql).

CREATE FUNCTION tide.down_node(node text, reason text DEFAULT NULL) RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    IF node IS NULL THEN
        RAISE EXCEPTION 'node must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Name one of the nodes in tide.nodes.';
    END IF;
    -- the trigger below releases the work, with this reason
    PERFORM pg_catalog.set_config('tide.down_reason',
                                  'node taken down' || coalesce(': ' || NULLIF(pg_catalog.btrim(reason), ''), ''), true);
    st := tide._set_node_state(node, '{ready,draining}', 'down');
    PERFORM pg_catalog.set_config('tide.down_reason', '', true);
    RETURN st;
END
$$;
COMMENT ON FUNCTION tide.down_node(text, text) IS
    'takes a node out now: down (until tide.resume_node), its live allocations released with the reason, their jobs retried, requeued or failed as for a lost node (R-C3, R-E5); returns its state';

-- A node set down with live work (by tide.down_node, whose reason comes
-- in tide.down_reason, or by a plain UPDATE; not by tide._nodes_lost,
-- which releases the work first) has it released as for a lost node.  A row trigger with a column list and
-- a condition: heartbeats and other updates of a node never fire it.
CREATE FUNCTION tide._nodes_set_down() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tide.allocations a WHERE a.node = NEW.name AND a.state <> 'released') THEN
        PERFORM tide._nodes_lost(ARRAY[NEW.name],
                                 coalesce(NULLIF(pg_catalog.current_setting('tide.down_reason', true), ''),
                                          'node taken down (UPDATE of tide.nodes)'));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._nodes_set_down() IS
    'trigger: a node set down by an UPDATE has its live allocations released as by tide.down_node (R-C3)';
CREATE TRIGGER nodes_set_down AFTER UPDATE OF state ON tide.nodes
    FOR EACH ROW WHEN (NEW.state = 'down' AND OLD.state <> 'down')
    EXECUTE FUNCTION tide._nodes_set_down();
