-- High availability: is this primary's replication one that a failover
-- keeps every acknowledged submit and report through (R-C6, docs/ha.md)?
--
-- pg_tide acknowledges a submit, a start and an exit with a COMMIT.  With
-- synchronous replication that commit returned only once a standby had the
-- WAL, so the standby a failover promotes has it.  With asynchronous
-- replication the new primary may lack the last commits: jobs whose ids
-- were acknowledged are gone and their ids are handed out again, and
-- allocations whose exits were acknowledged come back running.  This check
-- reads pg_stat_replication and the settings, and says so, one row per
-- check; it changes nothing and answers on a standby too.

CREATE FUNCTION tide.check_replication()
    RETURNS TABLE (check_name text, ok boolean, detail text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    names text := pg_catalog.current_setting('synchronous_standby_names');
    commit_mode text := pg_catalog.current_setting('synchronous_commit');
    n_standbys integer;
    n_sync integer;
    standbys text;
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        check_name := 'role';
        ok := true;
        detail := 'this server is a standby (in recovery): it answers reads only; run tide.check_replication() on the primary';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT count(*),
           count(*) FILTER (WHERE r.sync_state IN ('sync', 'quorum')),
           string_agg(pg_catalog.format('%s (%s, %s)', r.application_name, r.state, r.sync_state),
                      ', ' ORDER BY r.application_name)
      INTO n_standbys, n_sync, standbys
      FROM pg_catalog.pg_stat_replication r;

    check_name := 'standbys';
    ok := n_standbys > 0;
    detail := CASE WHEN n_standbys = 0
                   THEN 'no standby is connected: a failover has nothing to promote, and a lost disk loses the scheduler'
                   ELSE pg_catalog.format('%s standby(s) streaming: %s', n_standbys, standbys) END;
    RETURN NEXT;

    check_name := 'synchronous_standby_names';
    ok := names <> '';
    detail := CASE WHEN names = ''
                   THEN 'empty: every standby is asynchronous, so a failover can lose acknowledged submits and exits (jobs vanish, ids are handed out twice, finished allocations come back running); set it, or let Patroni do so with synchronous_mode: true'
                   ELSE pg_catalog.format('%L', names) END;
    RETURN NEXT;

    check_name := 'synchronous_commit';
    ok := commit_mode IN ('on', 'remote_apply', 'remote_write');
    detail := CASE WHEN ok
                   THEN pg_catalog.format('%s (this session''s value; a role or database may set another)', commit_mode)
                   ELSE pg_catalog.format('%s: commits do not wait for a standby, so a failover can lose what was acknowledged; use on', commit_mode) END;
    RETURN NEXT;

    check_name := 'synchronous standby';
    ok := n_sync > 0;
    detail := CASE WHEN n_sync > 0
                   THEN pg_catalog.format('%s synchronous standby(s) streaming', n_sync)
                   WHEN names <> ''
                   THEN 'synchronous_standby_names is set but no synchronous standby is streaming: commits wait (or, under Patroni''s non-strict synchronous mode, go on without one)'
                   ELSE 'none: a failover now can lose acknowledged work' END;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION tide.check_replication() IS
    'checks that a failover keeps every acknowledged submit and report (R-C6): one row per check (standbys, synchronous_standby_names, synchronous_commit, a synchronous standby streaming) with ok and a detail; on a standby, one row saying so';
REVOKE ALL ON FUNCTION tide.check_replication() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.check_replication() TO tide_admin, tide_reader;
