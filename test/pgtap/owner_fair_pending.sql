-- tide.pending's positions in a queue with owner_fair_share (R-O7) follow
-- the order the cycle places in: retry lane, priority, then the owner share
-- at the job's turn, age, id.  A queue of two owners gets room for one job
-- per cycle; before each cycle the job first in tide.pending is the one the
-- cycle places.  Submitters see the same positions for their own jobs;
-- tide._group_order (explain's order) agrees; off, the order is R-O1's.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(13);

-- A group of its own, without nodes yet; quota 8 GPUs.  Alice submitted
-- five one-GPU jobs (the last one held), then Bob three (the last one at
-- priority 1).
INSERT INTO tide.queues (name, quota, resource_group, owner_fair_share) VALUES ('qf', 'gpu=8', 'gf', true);
SELECT tide.submit('qf', 'cpu=1, gpu=1') AS a1, tide.submit('qf', 'cpu=1, gpu=1') AS a2,
       tide.submit('qf', 'cpu=1, gpu=1') AS a3, tide.submit('qf', 'cpu=1, gpu=1') AS a4,
       tide.submit('qf', 'cpu=1, gpu=1', hold => true) AS a5 \gset
SELECT tide.submit('qf', 'cpu=1, gpu=1') AS b1, tide.submit('qf', 'cpu=1, gpu=1') AS b2,
       tide.submit('qf', 'cpu=1, gpu=1', priority => 1) AS b3 \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:a1, :a2, :a3, :a4, :a5);
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id IN (:b1, :b2, :b3);

-- the queue's jobs in tide.pending's order, as role r
CREATE FUNCTION pg_temp.order_as(r text) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', r);
    SELECT array_agg(job_id ORDER BY position) INTO ids FROM tide.pending WHERE queue = 'qf';
    RESET ROLE;
    RETURN ids;
END $$;
-- the positions of role r's own jobs, as r sees them and as an administrator does
CREATE FUNCTION pg_temp.positions_as(r text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    said text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', r);
    SELECT string_agg(job_id || ':' || position, ' ' ORDER BY job_id) INTO said FROM tide.pending WHERE queue = 'qf';
    RESET ROLE;
    RETURN said;
END $$;
CREATE FUNCTION pg_temp.positions_of(who text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(job_id || ':' || position, ' ' ORDER BY job_id) FROM tide.pending WHERE queue = 'qf' AND owner = who $$;

-- bob's priority-1 job first; then the owners take turns (a tie in share
-- goes by age, then id: alice's jobs have the smaller ids); the held job,
-- which the cycle does not load, last
SELECT is(pg_temp.order_as('tap_admin'), ARRAY[:b3, :a1, :a2, :b1, :a3, :b2, :a4, :a5]::bigint[],
          'R-O7: positions by priority, then the owner share at each job''s turn');
SELECT is(pg_temp.positions_as('tap_alice'), pg_temp.positions_of('tap_alice'), 'alice sees her jobs at the same positions');
SELECT is(pg_temp.positions_as('tap_bob'), pg_temp.positions_of('tap_bob'), 'and bob his');
-- a login that is alice (no SET ROLE) sees the same
SET SESSION AUTHORIZATION tap_alice;
SELECT string_agg(job_id || ':' || position, ' ' ORDER BY job_id) AS alice_login FROM tide.pending WHERE queue = 'qf' \gset
SELECT (tide.explain(:a3) ->> 'position_in_queue')::int AS alice_explain \gset
RESET SESSION AUTHORIZATION;
SELECT is(:'alice_login'::text, pg_temp.positions_of('tap_alice'), 'so does a session logged in as alice');
SELECT is(:'alice_explain'::int, 5, 'and explain, computed as the extension''s owner, gives her job its position');
SELECT is((SELECT array_agg(o.job_id ORDER BY o.walk_position) FROM tide._group_order('gf') o),
          ARRAY[:b3, :a1, :a2, :b1, :a3, :b2, :a4]::bigint[], 'explain''s group order agrees (the loaded jobs)');
SELECT is((SELECT array_agg(owner || ' ' || rank ORDER BY rank) FROM tide.owner_fair_share WHERE queue = 'qf'),
          ARRAY['tap_alice 1', 'tap_bob 2'], 'tide.owner_fair_share: both owners for an administrator');
SET LOCAL ROLE tap_bob;
SELECT is((SELECT array_agg(owner || ' ' || rank) FROM tide.owner_fair_share), ARRAY['tap_bob 1'],
          'a submitter its own row, its rank among its rows');
SELECT is((SELECT array_agg(job_id ORDER BY job_id) FROM tide._owner_fair_positions()), ARRAY[:b1, :b2, :b3]::bigint[],
          'the positions'' helper, called directly, answers a submitter for its own jobs only');
RESET ROLE;

-- Off: R-O1 (priority, age, id).
SAVEPOINT off;
UPDATE tide.queues SET owner_fair_share = false WHERE name = 'qf';
SELECT is(pg_temp.order_as('tap_admin'), ARRAY[:b3, :a1, :a2, :a3, :a4, :a5, :b1, :b2]::bigint[],
          'without owner_fair_share: priority, age, id');
ROLLBACK TO SAVEPOINT off;

-- Room for one more job per cycle: a one-GPU node before each cycle.
CREATE TEMP TABLE turns (cycle int, first_pending bigint, placed bigint[]);
DO $$
DECLARE
    first bigint;
BEGIN
    FOR i IN 1 .. 7 LOOP
        SELECT p.job_id INTO first FROM tide.pending p WHERE p.queue = 'qf' ORDER BY p.position LIMIT 1;
        PERFORM tide.register_node('f' || i, 'cpu=4, memory=16Gi, gpu=1', resource_group => 'gf');
        PERFORM tide.run_cycle('gf');
        INSERT INTO turns
        SELECT i, first, array_agg(j.id ORDER BY j.id)
          FROM tide.jobs j
         WHERE j.queue = 'qf' AND j.state = 'allocated'
           AND NOT EXISTS (SELECT 1 FROM turns t WHERE j.id = ANY (t.placed));
    END LOOP;
END $$;
SELECT is((SELECT array_agg(cardinality(placed) ORDER BY cycle) FROM turns), array_fill(1, ARRAY[7]),
          'each cycle placed one job');
SELECT is((SELECT array_agg(placed[1] ORDER BY cycle) FROM turns), ARRAY[:b3, :a1, :a2, :b1, :a3, :b2, :a4]::bigint[],
          'the cycle placed in the order tide.pending showed');
SELECT is((SELECT count(*) FROM turns WHERE placed[1] = first_pending), 7::bigint,
          'before each cycle, the job first in tide.pending was the one it placed');

SELECT * FROM finish();
ROLLBACK;
