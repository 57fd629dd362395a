-- Quiet cycles: a cycle in which nothing it reads has changed since the
-- last complete cycle skips its load (docs/cadence.md).
--
-- Every statement that writes what the cycle reads bumps tide.change_seq
-- (nextval: no row, no lock queue, not undone by a rollback) while holding
-- a shared advisory lock on tide._change_lock_key() until it commits.  A
-- cycle reads the counter, then tries that lock exclusively for an instant:
-- if it gets it, every writer that bumped the counter up to the value read
-- has committed or rolled back, so the cycle's load sees all of them and
-- the value read stands for the state loaded.  If it does not get it, some
-- writer is still in flight and the cycle loads in full and records nothing
-- to compare with.  The cycle's own writes do not bump the counter (the
-- backend's writer is then cycle or cycle_write: src/writer.c); a cycle
-- that changed anything bumps it once at its end instead, so that the
-- next cycle loads again.

CREATE SEQUENCE tide.change_seq;
COMMENT ON SEQUENCE tide.change_seq IS
    'bumped by every statement that writes what the scheduling cycle reads (queues, nodes but heartbeats, jobs, tasks, allocations, evictions, eviction holds); equal values mean nothing changed';

CREATE FUNCTION tide._change_lock_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 8388346165908733954::bigint $$;   -- 'tide' << 32 | 2
COMMENT ON FUNCTION tide._change_lock_key() IS
    'advisory lock key that writers bumping tide.change_seq hold shared until they commit';

-- In C (src/changed.c): every submission by INSERT fires it twice
-- (tide.submit bumps once itself).
CREATE FUNCTION tide._changed() RETURNS trigger
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'tide_changed';
COMMENT ON FUNCTION tide._changed() IS
    'statement trigger: bumps tide.change_seq, holding tide._change_lock_key() shared until commit, unless tide.run_cycle() itself writes';
REVOKE ALL ON FUNCTION tide._changed() FROM PUBLIC;

CREATE TRIGGER queues_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.queues
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();
CREATE TRIGGER nodes_change_seq AFTER INSERT OR DELETE OR TRUNCATE ON tide.nodes
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();
-- every column the cycle reads but heartbeat_at: heartbeats of thousands of
-- nodes would never let a cycle be quiet, and lost nodes are found by their
-- own query before every cycle
CREATE TRIGGER nodes_change_seq_update
    AFTER UPDATE OF name, capacity, gpu_type, gpu_topology, labels, state, allow_cpu_jobs, resource_group ON tide.nodes
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();
-- (tide.submit bumps once for its job and task: src/submit.c)
CREATE TRIGGER jobs_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.jobs
    FOR EACH STATEMENT WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._changed();
CREATE TRIGGER job_tasks_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.job_tasks
    FOR EACH STATEMENT WHEN (tide._writer() <> 'submit') EXECUTE FUNCTION tide._changed();
CREATE TRIGGER allocations_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.allocations
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();
CREATE TRIGGER evictions_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.evictions
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();
CREATE TRIGGER eviction_holds_change_seq AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tide.eviction_holds
    FOR EACH STATEMENT EXECUTE FUNCTION tide._changed();

-- What the last complete cycle of each scope saw: the counter it read before
-- its load (NULL: unknown, load next time) and when a decision that depends
-- on the clock may change (R-E4 min_runtime coming due, a running job's time
-- limit passing, at most a minute ahead).
CREATE TABLE tide.cycle_state (
    resource_group text PRIMARY KEY,
    change_seq     bigint,
    recheck_at     timestamptz,
    cycle_id       bigint NOT NULL,
    changes_pruned_below xid8
);
COMMENT ON TABLE tide.cycle_state IS
    'per cycle scope ('''' = the whole cluster, else a resource group): tide.change_seq as the last complete cycle loaded it, and when the clock alone may change its decisions';
COMMENT ON COLUMN tide.cycle_state.changes_pruned_below IS
    'this scope''s cycles deleted the tide.job_changes rows of transactions below this id; a kept load older than the highest mark loads in full';
GRANT SELECT, INSERT, UPDATE ON tide.cycle_state TO tide_admin;
GRANT SELECT ON tide.cycle_state TO tide_reader;
GRANT SELECT, USAGE ON SEQUENCE tide.change_seq TO tide_admin;

-- Incremental loads (docs/cadence.md#incremental-loads): a whole-cluster
-- cycle that runs in the same backend as the one before it keeps the rows
-- it loaded (src/cycle_cache.c) and reads again only the jobs named here
-- since its last load.  Every statement that writes tide.jobs, tide.job_tasks
-- or tide.allocations names the jobs it touched, with its transaction's id;
-- a TRUNCATE names none (NULL: everything changed).  The cycle's own
-- trigger-less writes are named too (ENABLE ALWAYS).
--
-- A kept load made under a snapshot whose xmin was X has seen every
-- transaction below X, so the next load reads again the jobs of the rows
-- with xid >= X (some of them it saw already: reading a job again is
-- harmless).  Every cycle (a resource group's too) then deletes rows
-- below its own load's xmin, a bounded batch of the oldest
-- (tide._prune_job_changes below), and records that in its scope's
-- tide.cycle_state.changes_pruned_below; a kept load older than the
-- highest mark (another backend's cycles pruned what it had not seen)
-- loads in full.  Unlogged: after
-- a crash or on a promoted standby every backend is new, and loads in full.
CREATE UNLOGGED TABLE tide.job_changes (
    xid    xid8   NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    job_id bigint
);
CREATE INDEX job_changes_xid_idx ON tide.job_changes (xid);
COMMENT ON TABLE tide.job_changes IS
    'the jobs whose rows, tasks or allocations each transaction wrote (NULL: all, a TRUNCATE), for the incremental load of the cycle; pruned by every cycle';
GRANT SELECT, DELETE ON tide.job_changes TO tide_admin;

-- The pruning of every cycle (src/cycle_cache.c): the rows of transactions
-- below `below` (its load's xmin: every later load has seen them), oldest
-- first and at most max_rows of them, so that no cycle pays for a backlog
-- of changes at once (the first cycle after 100,000 submissions deleted
-- all their rows and its own, a seventh of its instructions); the rest are
-- left to the next cycles, and reading them again is harmless.  The scope's mark rises past
-- every row deleted: to `below` when none is left below it, else to the
-- highest transaction id deleted, plus one.  One pruner at a time (resource
-- groups' cycles run side by side): a cycle that cannot take the lock at
-- once leaves the pruning to the one that holds it, and no row lock is
-- needed.  Returns the rows deleted (NULL: another cycle was pruning).
CREATE FUNCTION tide._prune_job_changes(below xid8, scope text, max_rows integer) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n bigint;
    last xid8;
BEGIN
    IF NOT pg_try_advisory_xact_lock(8388346165908733956) THEN   -- 'tide' << 32 | 4
        RETURN NULL;
    END IF;
    WITH doomed AS MATERIALIZED (
        SELECT c.ctid, c.xid FROM tide.job_changes c WHERE c.xid < below ORDER BY c.xid LIMIT max_rows),
    gone AS (
        DELETE FROM tide.job_changes c WHERE c.ctid = ANY (ARRAY(SELECT d.ctid FROM doomed d)))
    SELECT count(*), max(d.xid) INTO n, last FROM doomed d;
    UPDATE tide.cycle_state s
       SET changes_pruned_below = GREATEST(s.changes_pruned_below,
                                           CASE WHEN n < max_rows THEN below
                                                ELSE (last::text::numeric + 1)::text::xid8 END)
     WHERE s.resource_group = scope;
    RETURN n;
END
$$;
COMMENT ON FUNCTION tide._prune_job_changes(xid8, text, integer) IS
    'a cycle''s pruning of tide.job_changes: at most max_rows rows below the load''s xmin, oldest first, and the scope''s changes_pruned_below raised past them; NULL when another cycle prunes meanwhile';
REVOKE ALL ON FUNCTION tide._prune_job_changes(xid8, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._prune_job_changes(xid8, text, integer) TO tide_admin;

-- In C (src/changed.c): the statement's transition table (REFERENCING)
-- names the jobs, by the column given as the trigger's argument.  SECURITY
-- DEFINER: every writer of those tables may name what it wrote, and only so.
CREATE FUNCTION tide._log_job_changes() RETURNS trigger
    LANGUAGE c SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'tide_log_job_changes';
COMMENT ON FUNCTION tide._log_job_changes() IS
    'statement trigger with a transition table: the ids in the column named by its argument into tide.job_changes (a TRUNCATE: NULL)';
REVOKE ALL ON FUNCTION tide._log_job_changes() FROM PUBLIC;

-- <table>_log_insert, _update, _delete (each with its transition table:
-- one event a trigger) and _truncate, on the three tables; ENABLE ALWAYS:
-- the cycle writes jobs and allocations with session_replication_role =
-- replica (src/cycle_guard.c), and these must fire for it too.
DO $$
DECLARE
    t record;
    ev text;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('jobs', 'id'), ('job_tasks', 'job_id'), ('allocations', 'job_id')) v(tab, col) LOOP
        FOREACH ev IN ARRAY ARRAY['insert', 'update', 'delete', 'truncate'] LOOP
            EXECUTE format('CREATE TRIGGER %I AFTER %s ON tide.%I %s FOR EACH STATEMENT'
                           ' EXECUTE FUNCTION tide._log_job_changes(%L)',
                           t.tab || '_log_' || ev, upper(ev), t.tab,
                           CASE ev WHEN 'truncate' THEN '' WHEN 'delete' THEN 'REFERENCING OLD TABLE AS changed_rows'
                                   ELSE 'REFERENCING NEW TABLE AS changed_rows' END,
                           t.col);
            EXECUTE format('ALTER TABLE tide.%I ENABLE ALWAYS TRIGGER %I', t.tab, t.tab || '_log_' || ev);
        END LOOP;
    END LOOP;
END
$$;
