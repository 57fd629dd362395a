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

CREATE TABLE tide.job_transitions (
    old_state   text NOT NULL,
    new_state   text NOT NULL,
    made_by     text NOT NULL,
    -- made only by tide.run_cycle()'s own writes: the job trigger allows it
    -- only while tide._cycle_writing() is true (a flag in C that no setting
    -- and no other session can turn on)
    by_cycle_only boolean NOT NULL DEFAULT false,
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT job_transitions_states_check CHECK (
        old_state IN ('pending', 'allocated', 'running', 'evicting', 'succeeded', 'failed', 'cancelled')
        AND new_state IN ('pending', 'allocated', 'running', 'evicting', 'succeeded', 'failed', 'cancelled')
        AND old_state <> new_state)
);
COMMENT ON TABLE tide.job_transitions IS
    'The allowed job state changes; any other change of tide.jobs.state is refused. A new job starts pending.';
COMMENT ON COLUMN tide.job_transitions.by_cycle_only IS
    'only the scheduling cycle''s own writes may make this change (tide._cycle_writing()); any other UPDATE making it is refused';
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
    old_state   text NOT NULL,
    new_state   text NOT NULL,
    made_by     text NOT NULL,
    PRIMARY KEY (old_state, new_state),
    CONSTRAINT allocation_transitions_states_check CHECK (
        old_state IN ('assigned', 'running', 'releasing', 'released')
        AND new_state IN ('assigned', 'running', 'releasing', 'released')
        AND old_state <> new_state)
);
COMMENT ON TABLE tide.allocation_transitions IS
    'The allowed allocation state changes; released is final (an allocation is released exactly once). A new allocation is assigned.';
INSERT INTO tide.allocation_transitions VALUES
    ('assigned',  'running',   'tide.started'),
    ('assigned',  'releasing', 'eviction: the launcher must confirm with tide.evicted'),
    ('assigned',  'released',  'tide.exited before start, or a lost node'),
    ('running',   'releasing', 'eviction: the launcher must confirm with tide.evicted'),
    ('running',   'released',  'tide.exited, or a lost node'),
    ('releasing', 'released',  'tide.evicted or tide.exited');
