-- The scheduling cycle: tide.run_cycle() (src/cycle.c around the policy
-- engine in src/engine; the policy is docs/scheduling.md).

-- jit = off: the cycle's statements are simple scans and joins of many rows,
-- for which compiling costs far more than it saves (250 ms of 1.5 s at 100k
-- pending jobs, docs/benchmarks.md).
CREATE FUNCTION tide.run_cycle() RETURNS bigint
    LANGUAGE c VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS 'MODULE_PATHNAME', 'tide_run_cycle';
COMMENT ON FUNCTION tide.run_cycle() IS
    'one scheduling cycle in the caller''s transaction: places pending jobs (R-O1..R-O4, R-A1, R-A2, R-L1..R-L6), records pending reasons (R-C2); returns the cycle id, or NULL at once when another cycle is running (R-C1)';
REVOKE ALL ON FUNCTION tide.run_cycle() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.run_cycle() TO tide_admin;

-- True only while this backend's tide.run_cycle() runs one of its own
-- writes (a flag in C, not a setting, so nothing else can turn it on): only
-- then may tide._log_cycle_placed() write history, and only the cycle's
-- give-up UPDATE move a job from allocated back to pending.
CREATE FUNCTION tide._cycle_writing() RETURNS boolean
    LANGUAGE c VOLATILE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'tide_cycle_writing';
COMMENT ON FUNCTION tide._cycle_writing() IS
    'true only while this backend''s tide.run_cycle() runs one of its own writes (tide._log_cycle_placed, allocated -> pending)';

-- The history of a cycle's placements.  The cycle moves its jobs from
-- pending to allocated with an UPDATE that fires no trigger
-- (src/cycle_guard.c), then logs exactly the jobs that UPDATE returned
-- here, in one statement, after the one check the state trigger would have
-- made of them.  Refused outside the cycle's own writes: no one else writes
-- history rows.
CREATE FUNCTION tide._log_cycle_placed(ids bigint[], reasons text[], cycle bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF NOT tide._cycle_writing() THEN
        RAISE EXCEPTION 'only tide.run_cycle() logs its placements this way'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Change job states with an UPDATE of tide.jobs; its trigger logs them.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM tide.job_transitions t
                    WHERE t.old_state = 'pending' AND t.new_state = 'allocated') THEN
        RAISE EXCEPTION 'job % cannot go from pending to allocated', ids[1]
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The allowed changes are listed in tide.job_transitions (docs/lifecycle.md).';
    END IF;
    INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
    SELECT u.id, 'pending', 'allocated', u.reason, cycle
      FROM unnest(ids, reasons) AS u(id, reason)
     ORDER BY u.id;
END
$$;
COMMENT ON FUNCTION tide._log_cycle_placed(bigint[], text[], bigint) IS
    'the job_events rows of a cycle''s placements (pending -> allocated), written while tide.run_cycle() writes, refused otherwise';
-- Called by the cycle as whoever runs it (an administrator, or pg_cron's
-- superuser): nobody else has a reason to.
REVOKE ALL ON FUNCTION tide._log_cycle_placed(bigint[], text[], bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._log_cycle_placed(bigint[], text[], bigint) TO tide_admin;

-- A resource group's cycle: groups share no nodes and no queues, so their
-- cycles run in parallel backends (docs/cadence.md#a-cycle-per-resource-group).
CREATE FUNCTION tide.run_cycle(resource_group text) RETURNS bigint
    LANGUAGE c VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS 'MODULE_PATHNAME', 'tide_run_cycle_group';
COMMENT ON FUNCTION tide.run_cycle(text) IS
    'one scheduling cycle of one resource group (its nodes, its queues and their jobs) in the caller''s transaction; returns the cycle id, or NULL at once while a cycle of that group or of the whole cluster runs (R-C1 per group)';
REVOKE ALL ON FUNCTION tide.run_cycle(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.run_cycle(text) TO tide_admin;
