-- Every job state change: the 14 in tide.job_transitions are allowed and
-- logged in tide.job_events, except allocated -> pending, which only the
-- cycle's own give-up may make (the isolation spec tide_tasks_cycle); the 29 others are refused.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(42 + 2 + 9 + 4);

-- Put a fresh job into a state without the checks (replica mode skips
-- ordinary triggers), then try the change with them.
CREATE FUNCTION pg_temp.job_in(st text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j bigint;
BEGIN
    j := tide.submit('q1', 'gpu=1');
    SET LOCAL session_replication_role = replica;
    UPDATE tide.jobs SET state = st, evict_goal = CASE WHEN st = 'evicting' THEN 'requeue' END WHERE id = j;
    SET LOCAL session_replication_role = origin;
    RETURN j;
END $$;
CREATE FUNCTION pg_temp.try(a text, b text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE j bigint := pg_temp.job_in(a);
BEGIN
    UPDATE tide.jobs SET state = b, state_reason = 'test ' || a || ' -> ' || b,
                         evict_goal = CASE WHEN b = 'evicting' THEN 'requeue' END
     WHERE id = j;
    IF NOT EXISTS (SELECT 1 FROM tide.job_events WHERE job_id = j AND old_state = a AND new_state = b
                      AND reason = 'test ' || a || ' -> ' || b) THEN
        RETURN 'not logged';
    END IF;
    RETURN 'ok';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RETURN SQLERRM;
END $$;

SELECT is(pg_temp.try(a, b),
          CASE WHEN t.old_state IS NOT NULL AND NOT cycle_only THEN 'ok'
               ELSE format('job %s cannot go from %s to %s', currval('tide.jobs_id_seq'), a, b) END,
          format('%s -> %s %s', a, b, CASE WHEN t.old_state IS NULL THEN 'refused'
                                           WHEN cycle_only THEN 'refused (only the cycle makes it)'
                                           ELSE 'allowed and logged' END))
  FROM unnest(ARRAY['pending','allocated','running','evicting','succeeded','failed','cancelled']) WITH ORDINALITY s1(a, i)
 CROSS JOIN unnest(ARRAY['pending','allocated','running','evicting','succeeded','failed','cancelled']) WITH ORDINALITY s2(b, k)
  LEFT JOIN tide.job_transitions t ON t.old_state = a AND t.new_state = b
 CROSS JOIN LATERAL (SELECT a = 'allocated' AND b = 'pending' AS cycle_only) c
 WHERE a <> b
 ORDER BY i, k;

-- The table itself says which change only the cycle makes.
SELECT is(ARRAY(SELECT old_state || ' -> ' || new_state FROM tide.job_transitions WHERE by_cycle_only),
          ARRAY['allocated -> pending'], 'tide.job_transitions marks the cycle-only change');
-- The cycle's own placements and their history rows are written by
-- tide._cycle_place_jobs, which nothing else may call (tide._writer() = 'cycle_write'
-- is false outside the cycle).
SELECT throws_ok($$SELECT tide._cycle_place_jobs(ARRAY[1::bigint], ARRAY['(0,1)'::tid], ARRAY[true], ARRAY['forged'], ARRAY[false], 1, false)$$,
                 '42501', 'only tide.run_cycle() places jobs this way', 'no one but the cycle places and logs jobs that way');

-- The cycle's set-based write: one UPDATE for many jobs, one event each,
-- carrying the transaction's cycle id and each row's reason.
CREATE TEMP TABLE batch AS SELECT pg_temp.job_in('pending') AS id FROM generate_series(1, 5);
INSERT INTO tide.cycles (id) VALUES (424242);
SELECT set_config('tide.cycle_id', '424242', true);
UPDATE tide.jobs j SET state = 'allocated', state_reason = 'placed on ' || u.node
  FROM unnest((SELECT array_agg(id ORDER BY id) FROM batch), ARRAY['n1','n2','n1','n2','n1']) u(id, node)
 WHERE j.id = u.id;
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE cycle_id = 424242), 5, 'set-based update: one event per job');
SELECT is((SELECT count(DISTINCT reason)::int FROM tide.job_events WHERE cycle_id = 424242), 2, 'each event has its row''s reason');
SELECT set_config('tide.cycle_id', '', true);

-- One bad row refuses the whole statement.
SELECT throws_ok($$UPDATE tide.jobs SET state = CASE WHEN id = (SELECT min(id) FROM batch) THEN 'succeeded' ELSE 'pending' END WHERE id IN (SELECT id FROM batch)$$,
                 '55000', NULL, 'one refused row refuses the statement');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE state = 'allocated' AND id IN (SELECT id FROM batch)), 5, 'nothing changed');
-- Changes that keep the state log nothing.
UPDATE tide.jobs SET pending_reason = 'x' WHERE id IN (SELECT id FROM batch);
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id IN (SELECT id FROM batch)), 10,
          'no event for an update that keeps the state');

-- Submissions are logged with old_state NULL, and must be pending.
SELECT is((SELECT count(*)::int FROM tide.job_events e JOIN tide.jobs j ON j.id = e.job_id WHERE e.old_state IS NULL AND e.new_state = 'pending' AND e.reason = 'submitted'),
          (SELECT count(*)::int FROM tide.jobs), 'every job has its submission event');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, state) VALUES ('q1', 'running')$$, '23514',
                 'a new job must be pending, not "running"', 'a new job must be pending');
SELECT throws_ok($$UPDATE tide.job_events SET reason = 'x'$$, '42501', 'tide.job_events is append-only', 'history is append-only');
SELECT throws_ok($$UPDATE tide.jobs SET state = 'evicting' WHERE id IN (SELECT id FROM batch)$$, '23514', NULL,
                 'evicting needs an evict_goal');

-- A restore (pg_dump scripts set row_security = off) puts rows back as they were.
SET LOCAL row_security = off;
INSERT INTO tide.jobs (id, queue, service_type, state, state_reason, started_at)
VALUES (-10, 'q1', 'training', 'running', 'all replicas started', now());
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (-10, 'main', 1, 'gpu=1');
INSERT INTO tide.allocations (job_id, role, replica, node, resources, state, exit_code, released_at, release_reason)
VALUES (-10, 'main', 0, 'n1', 'gpu=1', 'released', 0, now(), 'exited');
SELECT lives_ok($$SET CONSTRAINTS ALL IMMEDIATE$$, 'restore: deferred checks pass');
RESET row_security;
SELECT is(pg_temp.jstate(-10), 'running', 'restore: a running job goes back as running');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = -10), 0, 'restore: no new history');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, state) VALUES ('q1', 'running')$$, '23514', NULL,
                 'with row_security on again, the checks are back');

SELECT * FROM finish();
ROLLBACK;
