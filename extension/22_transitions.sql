-- The job and allocation state machines: the allowed changes, as data.
--
-- Every writer (tide.cancel, the launcher calls, the scheduling cycle, an
-- administrator's UPDATE) changes states with plain set-based statements on
-- tide.jobs and tide.allocations.  Statement-level AFTER triggers with
-- transition tables check every (old, new) pair against the tables below and
-- append the history in one INSERT ... SELECT; no per-row code runs on the
-- cycle's hot path.  The protocol is in docs/lifecycle.md.
--
--   23_job_checks.sql    what a new job and its tasks must be
--   24_job_history.sql   job state changes: checked, logged, cancels carried out
--   25_allocations.sql   allocation state changes; live allocations fit their nodes
--   26_rollup.sql        allocation changes rolled up to job states, retries, lost nodes
--   62_evictions.sql     tide._evict, the one way work is stopped

-- The states, each written once: the transitions below refer to them, and
-- the CHECKs of tide.jobs.state and tide.allocations.state are made from
-- them at the end of this file (a CHECK, not a foreign key: a key's check
-- would lock the state's row on every submission and every placement).
CREATE TABLE tide.job_states (
    state   text PRIMARY KEY,
    final   boolean NOT NULL,
    meaning text NOT NULL
);
COMMENT ON TABLE tide.job_states IS
    'The job states (tide.jobs.state); a final state is one a job leaves only by the late exits of R-C3 (docs/lifecycle.md)';
INSERT INTO tide.job_states VALUES
    ('pending',   false, 'waiting to be placed'),
    ('allocated', false, 'placed: allocations assigned, not every replica started'),
    ('running',   false, 'every assigned allocation started'),
    ('evicting',  false, 'being stopped; evict_goal says what it becomes'),
    ('succeeded', true,  'every allocation exited 0'),
    ('failed',    true,  'an allocation exited non-zero, or an eviction with goal fail'),
    ('cancelled', true,  'cancelled before it finished');

CREATE TABLE tide.allocation_states (
    state   text PRIMARY KEY,
    live    boolean NOT NULL,
    meaning text NOT NULL
);
COMMENT ON TABLE tide.allocation_states IS
    'The allocation states (tide.allocations.state); a live allocation holds its node''s resources';
INSERT INTO tide.allocation_states VALUES
    ('assigned',  true,  'placed by a cycle, not started yet'),
    ('running',   true,  'its launcher started it (tide.started)'),
    ('releasing', true,  'to be stopped: its launcher confirms with tide.evicted'),
    ('released',  false, 'ended: its resources are free (final)');

CREATE TABLE tide.job_transitions (
    old_state   text NOT NULL REFERENCES tide.job_states,
    new_state   text NOT NULL REFERENCES tide.job_states,
    made_by     text NOT NULL,
    -- made only by tide.run_cycle()'s own writes: the job trigger allows it
    -- only while tide._writer() = 'cycle_write' (a value in C that no
    -- setting and no other session can set)
    by_cycle_only boolean NOT NULL DEFAULT false,
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT job_transitions_states_check CHECK (old_state <> new_state)
);
COMMENT ON COLUMN tide.job_transitions.made_by IS
    'who makes the change, for people (no code reads it)';
COMMENT ON TABLE tide.job_transitions IS
    'The allowed job state changes; any other change of tide.jobs.state is refused. A new job starts pending.';
COMMENT ON COLUMN tide.job_transitions.by_cycle_only IS
    'only the scheduling cycle''s own writes may make this change (tide._writer() = ''cycle_write''); any other UPDATE making it is refused';
INSERT INTO tide.job_transitions (old_state, new_state, made_by) VALUES
    ('pending',   'allocated', 'a cycle placed the job (its allocations are assigned)'),
    ('pending',   'cancelled', 'cancel of a pending job'),
    ('allocated', 'running',   'the last assigned allocation started'),
    ('allocated', 'evicting',  'eviction (preempt, reclaim, cancel, lost node) before every replica started'),
    ('allocated', 'succeeded', 'every allocation exited 0'),
    ('allocated', 'failed',    'an allocation exited non-zero'),
    ('running',   'evicting',  'eviction (preempt, reclaim, cancel, lost node)'),
    ('running',   'succeeded', 'every allocation exited 0'),
    ('running',   'failed',    'an allocation exited non-zero'),
    ('evicting',  'pending',   'eviction done, goal requeue'),
    ('evicting',  'failed',    'eviction done, goal fail'),
    ('evicting',  'cancelled', 'eviction done, goal cancel'),
    -- R-T6: the work had finished before the eviction was decided
    ('evicting',  'succeeded', 'every allocation of its placement exited 0 before its eviction was decided (reported after it)'),
    -- R-C3: a node lost by the cycle that comes back reports that the work
    -- finished meanwhile, before anything replaced it (docs/lifecycle.md)
    ('pending',   'succeeded', 'a late tide.exited: every replica of its lost attempt exited 0, and it was not placed again'),
    ('failed',    'succeeded', 'a late tide.exited: every replica of its lost attempt exited 0, and its retry was not placed');
-- A cycle locks the jobs it places, then checks their tasks did not change
-- since it loaded them; a job whose tasks did goes back, without any
-- allocation, and the next cycle places it whole (docs/lifecycle.md).
INSERT INTO tide.job_transitions (old_state, new_state, made_by, by_cycle_only) VALUES
    ('allocated', 'pending',   'the cycle gave up its placement: the job''s tasks changed while it placed it (no allocation was made); only tide.run_cycle() makes it', true);

CREATE TABLE tide.allocation_transitions (
    old_state   text NOT NULL REFERENCES tide.allocation_states,
    new_state   text NOT NULL REFERENCES tide.allocation_states,
    made_by     text NOT NULL,
    -- the launcher reports that may make this change (tide._report_accepts)
    reports     text[] NOT NULL DEFAULT '{}'
                CONSTRAINT allocation_transitions_reports_check
                CHECK (reports <@ ARRAY['started', 'exited', 'evicted']::text[]),
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT allocation_transitions_states_check CHECK (old_state <> new_state)
);
COMMENT ON TABLE tide.allocation_transitions IS
    'The allowed allocation state changes; released is final (an allocation is released exactly once). A new allocation is assigned.';
COMMENT ON COLUMN tide.allocation_transitions.made_by IS
    'who makes the change, for people (no code reads it)';
COMMENT ON COLUMN tide.allocation_transitions.reports IS
    'the launcher reports (tide.started, tide.exited, tide.evicted) that may make this change; the reports accept exactly these';
INSERT INTO tide.allocation_transitions (old_state, new_state, made_by, reports) VALUES
    ('assigned',  'running',   'tide.started',                                            '{started}'),
    ('assigned',  'releasing', 'eviction: the launcher must confirm with tide.evicted',   '{}'),
    ('assigned',  'released',  'tide.exited before start, or a lost node',                '{exited}'),
    ('running',   'releasing', 'eviction: the launcher must confirm with tide.evicted',   '{}'),
    ('running',   'released',  'tide.exited, or a lost node',                             '{exited}'),
    ('releasing', 'released',  'tide.evicted or tide.exited',                             '{evicted,exited}');

-- The state columns' CHECKs, from the tables above: the lists are written
-- only there.
DO $$
BEGIN
    EXECUTE pg_catalog.format(
        'ALTER TABLE tide.jobs ADD CONSTRAINT jobs_state_check CHECK (state IN (%s))',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(state), ', ' ORDER BY final, state)
           FROM tide.job_states));
    EXECUTE pg_catalog.format(
        'ALTER TABLE tide.allocations ADD CONSTRAINT allocations_state_check CHECK (state IN (%s))',
        (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(state), ', ' ORDER BY live DESC, state)
           FROM tide.allocation_states));
END
$$;
