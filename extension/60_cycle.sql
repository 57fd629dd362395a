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

-- A cycle's job writes, one statement: the placed jobs (placed[i]) move
-- from pending to allocated with their reason, the others get their
-- unschedulable mark or pending reason, and each job moved gets its
-- tide.job_events row, as the state trigger would have written it (the
-- cycle runs this with no trigger firing: src/cycle_guard.c).  The rows are
-- found by tids[i], the ctid of job ids[i]'s row as the cycle loaded it (a
-- TID scan, not a scan of every pending job), and the id must match too (a
-- freed slot may hold another row by now).  A job whose row another
-- transaction changed since the load, committed before this UPDATE or
-- while it waits for the row, has a new row version that no tids[i] names:
-- it stays as it is this cycle, never placed on what the cycle read before
-- the change.  Only jobs still pending and not cancelled change;
-- skip_locked leaves out the rows another transaction holds.  Returns the
-- ids of the jobs moved.  Refused outside the cycle's own writes: no one
-- else writes history rows.
CREATE FUNCTION tide._cycle_place_jobs(ids bigint[], tids tid[], placed boolean[], reasons text[], unsched boolean[],
                                       cycle bigint, skip_locked boolean) RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- a TID scan is costed as one random page a row, more than reading
    -- every pending job: the only scan of tide.jobs left enabled here
    SET enable_seqscan = off SET enable_indexscan = off SET enable_bitmapscan = off
    AS $$
DECLARE
    moved bigint[];
BEGIN
    IF tide._writer() <> 'cycle_write' THEN
        RAISE EXCEPTION 'only tide.run_cycle() places jobs this way'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Change job states with an UPDATE of tide.jobs; its trigger logs them.';
    END IF;
    IF true = ANY (placed)
       AND NOT EXISTS (SELECT 1 FROM tide.job_transitions t
                        WHERE t.old_state = 'pending' AND t.new_state = 'allocated') THEN
        RAISE EXCEPTION 'job % cannot go from pending to allocated', ids[array_position(placed, true)]
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The allowed changes are listed in tide.job_transitions (docs/lifecycle.md).';
    END IF;
    -- EXECUTE: planned each call with the arrays' sizes known, so always
    -- as a TID scan joined to the unnest() by hash, not as a cached generic
    -- plan that guesses ten rows an array.
    -- skip_locked: lock first, skipping the rows another transaction holds
    -- (lk is read only then).  The history rows in job id order, as one
    -- INSERT of the state trigger's would have them.
    EXECUTE $q$
    WITH lk AS MATERIALIZED (
        SELECT j.id FROM tide.jobs j
         WHERE $7 AND j.ctid = ANY ($2) AND j.id = ANY ($1) AND j.state = 'pending' AND NOT j.cancel_requested
           FOR NO KEY UPDATE OF j SKIP LOCKED),
    upd AS (
        UPDATE tide.jobs j
           SET state = CASE WHEN u.placed THEN 'allocated' ELSE j.state END,
               state_reason = CASE WHEN u.placed THEN u.reason ELSE j.state_reason END,
               pending_reason = CASE WHEN u.placed THEN NULL ELSE u.reason END,
               unschedulable = u.unschedulable
          -- unnest() in a select list streams; in FROM it stores every row first
          FROM (SELECT pg_catalog.unnest($1) AS id, pg_catalog.unnest($3) AS placed,
                       pg_catalog.unnest($4) AS reason, pg_catalog.unnest($5) AS unschedulable) u
         WHERE j.ctid = ANY ($2) AND j.id = u.id AND j.state = 'pending' AND NOT j.cancel_requested
           AND (NOT $7 OR j.id IN (SELECT lk.id FROM lk))
        RETURNING j.id, u.placed, u.reason),
    ev AS (
        INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
        SELECT upd.id, 'pending', 'allocated', upd.reason, $6 FROM upd WHERE upd.placed ORDER BY upd.id
        RETURNING job_id)
    SELECT pg_catalog.array_agg(ev.job_id) FROM ev
    $q$ INTO moved USING ids, tids, placed, reasons, unsched, cycle, skip_locked;
    RETURN moved;
END
$$;
COMMENT ON FUNCTION tide._cycle_place_jobs(bigint[], tid[], boolean[], text[], boolean[], bigint, boolean) IS
    'a cycle''s job writes in one statement: placed jobs to allocated with their tide.job_events rows, unschedulable marks, pending reasons; run by tide.run_cycle() only, refused otherwise';
-- Called by the cycle as whoever runs it (an administrator, or pg_cron's
-- superuser): nobody else has a reason to.
REVOKE ALL ON FUNCTION tide._cycle_place_jobs(bigint[], tid[], boolean[], text[], boolean[], bigint, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._cycle_place_jobs(bigint[], tid[], boolean[], text[], boolean[], bigint, boolean) TO tide_admin;

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
