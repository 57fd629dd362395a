-- Job state changes: each one is checked against tide.job_transitions and
-- appended to tide.job_events (the append-only history) by the same
-- statement trigger; cancel requests are carried out; a job holding
-- resources cannot be deleted.

CREATE FUNCTION tide._jobs_after_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
    SELECT n.id, NULL, n.state, n.state_reason, tide._current_cycle()
      FROM new_jobs n
     ORDER BY n.id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_insert() IS
    'statement trigger: logs the submission of every new job in tide.job_events (old_state NULL)';
-- (tide.submit writes its job's event row itself: src/submit.c)
CREATE TRIGGER jobs_after_insert AFTER INSERT ON tide.jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._jobs_after_insert();

CREATE FUNCTION tide._jobs_after_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    -- One join of the transition tables (a cycle's update holds every job
    -- whose reason it rewrote too): state changes are logged, then checked
    -- against tide.job_transitions (its by_cycle_only rows only in the
    -- cycle's own writes; a bad one aborts the whole statement, its log
    -- rows with it), and new cancel requests collected.  Dynamic
    -- SQL so that the plan fits this statement's transition tables (a
    -- cached plan made for one row would join thousands by nested loop).
    EXECUTE $q$
        WITH changed AS MATERIALIZED (
            SELECT n.id, o.state AS old_state, n.state AS new_state, n.state_reason,
                   n.cancel_requested AND NOT o.cancel_requested AS cancel
              FROM old_jobs o JOIN new_jobs n ON n.id = o.id
             WHERE o.state <> n.state OR (n.cancel_requested AND NOT o.cancel_requested)),
        logged AS (
            INSERT INTO tide.job_events (job_id, old_state, new_state, reason, cycle_id)
            SELECT c.id, c.old_state, c.new_state, c.state_reason, $1
              FROM changed c
             WHERE c.old_state <> c.new_state
             ORDER BY c.id
            RETURNING job_id, old_state, new_state)
        SELECT b.job_id AS bad_id, b.old_state, b.new_state,
               (SELECT pg_catalog.array_agg(c.id ORDER BY c.id) FROM changed c WHERE c.cancel) AS cancels,
               -- a pending job holds nothing: it may not become pending
               -- while an allocation of it is live
               (SELECT c.id FROM changed c
                 WHERE c.new_state = 'pending'
                   AND EXISTS (SELECT 1 FROM tide.allocations a WHERE a.job_id = c.id AND a.state <> 'released')
                 ORDER BY c.id LIMIT 1) AS live_id
          FROM (SELECT 1) one
          LEFT JOIN LATERAL (
              SELECT l.job_id, l.old_state, l.new_state FROM logged l
               WHERE NOT EXISTS (SELECT 1 FROM tide.job_transitions t
                                  WHERE t.old_state = l.old_state AND t.new_state = l.new_state
                                    AND (NOT t.by_cycle_only OR tide._writer() = 'cycle_write'))
               ORDER BY l.job_id
               LIMIT 1) b ON true $q$ INTO r USING tide._current_cycle();
    IF r.bad_id IS NOT NULL THEN
        RAISE EXCEPTION 'job % cannot go from % to %', r.bad_id, r.old_state, r.new_state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'The allowed changes are listed in tide.job_transitions (docs/lifecycle.md).';
    END IF;
    IF r.live_id IS NOT NULL THEN
        RAISE EXCEPTION 'job % cannot be pending: it has live allocations', r.live_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Evict it first (its allocations must be released before it waits again).';
    END IF;
    IF r.cancels IS NOT NULL THEN
        PERFORM tide._apply_cancel(r.cancels);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_update() IS
    'statement trigger: refuses any job state change not in tide.job_transitions, logs the others in tide.job_events, and carries out cancel requests';
CREATE TRIGGER jobs_after_update AFTER UPDATE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_after_update();

CREATE FUNCTION tide._jobs_after_delete() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
BEGIN
    -- A job holding resources has processes on nodes: deleting its rows
    -- would leave them running on GPUs the next cycle gives away.
    SELECT o.id, o.state INTO bad FROM old_jobs o
     WHERE o.state IN ('allocated', 'running', 'evicting') AND NOT tide._restoring()
     ORDER BY o.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job % is %: it cannot be deleted while it holds resources', bad.id, bad.state
            USING ERRCODE = 'object_in_use',
                  HINT = 'Cancel it (tide.cancel) and delete it once it is cancelled, when its launchers have stopped it.';
    END IF;
    DELETE FROM tide.job_events e USING old_jobs o WHERE e.job_id = o.id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_after_delete() IS
    'statement trigger: refuses to delete jobs that hold resources (allocated, running, evicting); a deleted job takes its tide.job_events rows with it (what ON DELETE CASCADE did, one statement per delete)';
CREATE TRIGGER jobs_after_delete AFTER DELETE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_after_delete();

CREATE FUNCTION tide._job_events_refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    RAISE EXCEPTION 'tide.job_events is append-only'
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'History rows are never changed; an administrator may delete old rows for retention.';
END
$$;
COMMENT ON FUNCTION tide._job_events_refuse_change() IS 'trigger: job history rows are never updated (R-C4)';
CREATE TRIGGER job_events_append_only BEFORE UPDATE ON tide.job_events
    FOR EACH STATEMENT EXECUTE FUNCTION tide._job_events_refuse_change();
