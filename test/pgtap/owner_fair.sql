-- Owners within a queue (R-O7) through tide.run_cycle(): a queue with
-- owner_fair_share takes the head, among its owners' heads, with (retry
-- lane, higher priority, lower owner share, earlier created_at, smaller
-- id), the owner share being its usage in the queue averaged over
-- tide.fair_share_half_life (the usage now with 0) over the quota.  Off by
-- default: FIFO.  One owner's thousand jobs take turns with another's ten;
-- job priority and the retry lane still win; with a half-life a heavy past
-- user goes after; the cycle keeps the averages in tide.owner_fair_usage
-- (negligible ones deleted), tide.dry_run() writes none, and
-- tide.owner_fair_share shows them, a submitter its own rows only.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SET LOCAL tide.retry_backoff = 0;
SELECT plan(33);

CREATE ROLE of_alice IN ROLE tide_submitter;
CREATE ROLE of_bob IN ROLE tide_submitter;

-- The jobs an owner would get placed by the next cycle (tide.dry_run, nothing written).
CREATE FUNCTION pg_temp.would(who text) RETURNS bigint[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(DISTINCT d.job_id ORDER BY d.job_id), '{}')
      FROM tide.dry_run() d JOIN tide.jobs j ON j.id = d.job_id
     WHERE d.kind = 'place' AND j.owner = who
$$;
-- The first n pending jobs of an owner in a queue, by id.
CREATE FUNCTION pg_temp.first(who text, q text, n int) RETURNS bigint[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(id ORDER BY id), '{}')
      FROM (SELECT id FROM tide.jobs WHERE owner = who AND queue = q AND state = 'pending' ORDER BY id LIMIT n) x
$$;
CREATE FUNCTION pg_temp.placed(who text, q text) RETURNS int LANGUAGE sql AS $$
    SELECT count(*)::int FROM tide.jobs WHERE owner = who AND queue = q AND state = 'allocated'
$$;
CREATE FUNCTION pg_temp.jstate(job bigint) RETURNS text
    LANGUAGE sql AS $$ SELECT state FROM tide.jobs WHERE id = job $$;

-- ---------------------------------------------------------------- two backlogs
-- 16 GPUs; alice submitted 1,000 one-GPU jobs, then bob 10.
INSERT INTO tide.queues (name, quota) VALUES ('qf', 'gpu=16');
SELECT tide.register_node('f1', 'cpu=64, memory=256Gi, gpu=8');
SELECT tide.register_node('f2', 'cpu=64, memory=256Gi, gpu=8');
SELECT tide.submit_array('qf', 'cpu=1, gpu=1', 1000) AS a_arr \gset
SELECT tide.submit_array('qf', 'cpu=1, gpu=1', 10) AS b_arr \gset
UPDATE tide.jobs SET owner = 'of_alice' WHERE array_id = :a_arr;
UPDATE tide.jobs SET owner = 'of_bob' WHERE array_id = :b_arr;

SELECT is((SELECT owner_fair_share FROM tide.queues WHERE name = 'qf'), false,
          'tide.queues.owner_fair_share is off by default');
SELECT is(pg_temp.would('of_alice'), pg_temp.first('of_alice', 'qf', 16),
          'off (seed 000): alice''s first 16 jobs would be placed, FIFO');
SELECT is(pg_temp.would('of_bob'), '{}'::bigint[], 'off: bob waits behind her thousand');

UPDATE tide.queues SET owner_fair_share = true WHERE name = 'qf';
SELECT is(pg_temp.would('of_bob'), pg_temp.first('of_bob', 'qf', 8),
          'R-O7: the owners take turns: bob''s first 8 jobs would be placed');
SELECT is(pg_temp.would('of_alice'), pg_temp.first('of_alice', 'qf', 8), 'R-O7: and alice''s first 8');
SELECT is((SELECT array_agg(h.job_id ORDER BY (j.retry_of IS NULL), j.priority DESC, h.owner_share, j.created_at, j.id)
             FROM tide._owner_head_shares('default') h JOIN tide.jobs j ON j.id = h.job_id
            WHERE h.owner_share < 0.125),
          ARRAY[(pg_temp.first('of_alice', 'qf', 2))[1], (pg_temp.first('of_bob', 'qf', 2))[1],
                (pg_temp.first('of_alice', 'qf', 2))[2], (pg_temp.first('of_bob', 'qf', 2))[2]],
          'R-O7 in SQL: the jobs by (retry, priority, owner share at their turn, age, id) take turns as the walk does');
SET LOCAL tide.fair_share_half_life = '1d';
SELECT is(pg_temp.would('of_bob'), pg_temp.first('of_bob', 'qf', 8),
          'R-O7 with a half-life and no history: the same turns');
SELECT is((SELECT count(*)::int FROM tide.owner_fair_usage), 0, 'tide.dry_run() wrote no average');
SET LOCAL tide.fair_share_half_life = 0;

SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle with half-life 0');
SELECT is(pg_temp.placed('of_alice', 'qf') || ' ' || pg_temp.placed('of_bob', 'qf'), '8 8',
          'R-O7: the cycle placed 8 jobs of each');
SELECT is((SELECT count(*)::int FROM tide.owner_fair_usage), 0, 'half-life 0: no average is kept');
SELECT results_eq($$SELECT owner, usage::text, decayed, share, rank FROM tide.owner_fair_share WHERE queue = 'qf' ORDER BY rank$$,
                  $$VALUES ('of_alice', 'cpu=8, gpu=8', '{"gpu": 8}'::jsonb, 0.5, 1::bigint),
                           ('of_bob', 'cpu=8, gpu=8', '{"gpu": 8}'::jsonb, 0.5, 2::bigint)$$,
                  'tide.owner_fair_share: usage, decayed (the usage now), share of the quota, rank');
SET LOCAL ROLE of_bob;
SELECT is((SELECT array_agg(owner) FROM tide.owner_fair_share), ARRAY['of_bob']::text[],
          'a submitter sees only its own row');
RESET ROLE;

-- ---------------------------------------------------------------- priority, retry lane
-- one of bob's jobs ends: 1 GPU free, bob holds 7, alice 8
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.state = 'assigned';
SELECT tide.exited(a.id, 0)
  FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
 WHERE j.owner = 'of_bob' AND a.state = 'running' ORDER BY a.id LIMIT 1;
SELECT is(pg_temp.would('of_bob'), pg_temp.first('of_bob', 'qf', 1), 'R-O7: bob (the lower share) would get the free GPU');
SELECT tide.submit('qf', 'cpu=1, gpu=1', priority => 5) AS urgent \gset
UPDATE tide.jobs SET owner = 'of_alice' WHERE id = :urgent;
SELECT is(pg_temp.would('of_alice'), ARRAY[:urgent]::bigint[], 'R-O7: alice''s priority-5 job goes first: priority wins over owner share');
SELECT is(pg_temp.would('of_bob'), '{}'::bigint[], 'R-O7: bob waits for it');
-- alice's urgent job is a retry now (R-O3) at priority 0: the retry lane goes first still
UPDATE tide.jobs SET priority = 0, retry_of = (SELECT min(id) FROM tide.jobs WHERE owner = 'of_alice') WHERE id = :urgent;
SELECT is(pg_temp.would('of_alice'), ARRAY[:urgent]::bigint[], 'R-O7: a retry of alice''s goes first: the retry lane wins too');
UPDATE tide.jobs SET retry_of = NULL WHERE id = :urgent;
SELECT is(pg_temp.would('of_bob'), pg_temp.first('of_bob', 'qf', 1), 'R-O7: back to priority 0: bob first again');
UPDATE tide.queues SET owner_fair_share = false WHERE name = 'qf';
SELECT is(pg_temp.would('of_alice'), pg_temp.first('of_alice', 'qf', 1), 'turned off: alice''s oldest job first again');
DELETE FROM tide.jobs WHERE queue = 'qf' AND state = 'pending';

-- ---------------------------------------------------------------- over time
-- Another group: one GPU, a queue of quota 4.  Lately alice used all of
-- it; carol's average is negligible, dave's is not; none has a job.
SET LOCAL tide.fair_share_half_life = '1d';
INSERT INTO tide.queues (name, quota, resource_group, owner_fair_share) VALUES ('qh', 'gpu=4', 'g2', true);
SELECT tide.register_node('h1', 'cpu=8, memory=64Gi, gpu=1', resource_group => 'g2');
INSERT INTO tide.owner_fair_usage (queue, owner, decayed, updated_at)
VALUES ('qh', 'of_alice', '{"gpu": 4}', now()), ('qh', 'of_carol', '{"gpu": 0.0005}', now()),
       ('qh', 'of_dave', '{"gpu": 0.5}', now());
SELECT tide.submit('qh', 'cpu=1, gpu=1') AS a1 \gset
SELECT tide.submit('qh', 'cpu=1, gpu=1') AS b1 \gset
UPDATE tide.jobs SET owner = 'of_alice' WHERE id = :a1;
UPDATE tide.jobs SET owner = 'of_bob' WHERE id = :b1;

SELECT is(pg_temp.would('of_bob'), ARRAY[:b1]::bigint[], 'R-O7 with a half-life: alice used more lately, bob''s later job goes first');
SELECT results_eq($$SELECT owner, share, rank FROM tide.owner_fair_share WHERE queue = 'qh' ORDER BY rank$$,
                  $$VALUES ('of_bob', 0, 1::bigint), ('of_carol', 0.000125, 2::bigint),
                           ('of_dave', 0.125, 3::bigint), ('of_alice', 1, 4::bigint)$$,
                  'tide.owner_fair_share ranks the owners by their averages over the quota');
SELECT is((SELECT (tide.explain(:a1) -> 'order_key' ->> 'owner_share')::numeric), 1::numeric,
          'tide.explain''s order key shows the owner''s share');
SELECT is((SELECT count(*)::int FROM tide.owner_fair_usage WHERE updated_at <> now()), 0, 'tide.dry_run() wrote no average');
SELECT ok(tide.run_cycle('g2') IS NOT NULL, 'a cycle of group g2 with half-life 1 day');
SELECT is(pg_temp.jstate(:b1) || ' ' || pg_temp.jstate(:a1), 'allocated pending', 'the cycle places bob''s job, alice''s waits');
SELECT ok((SELECT (decayed ->> 'gpu')::numeric BETWEEN 3.999 AND 4 AND updated_at > now()
             FROM tide.owner_fair_usage WHERE owner = 'of_alice'),
          'alice''s average is brought up to the cycle''s time (4, decayed over milliseconds)');
SELECT ok(NOT EXISTS (SELECT 1 FROM tide.owner_fair_usage WHERE owner = 'of_carol'),
          'carol''s negligible average (below 0.001, nothing held) is deleted');
SELECT ok(EXISTS (SELECT 1 FROM tide.owner_fair_usage WHERE owner = 'of_dave' AND updated_at > now()),
          'dave''s is kept though he has no job');
SELECT ok(tide.run_cycle('g2') IS NOT NULL, 'the next cycle');
SELECT is((SELECT decayed FROM tide.owner_fair_usage WHERE owner = 'of_bob'), '{"gpu": 0}'::jsonb,
          'bob holds a GPU now: his average starts, from 0');
-- a day later, half of alice's is left
UPDATE tide.owner_fair_usage SET decayed = '{"gpu": 4}', updated_at = now() - interval '1 day' WHERE owner = 'of_alice';
SELECT is((SELECT decayed FROM tide.owner_fair_share WHERE owner = 'of_alice'), '{"gpu": 2}'::jsonb,
          'tide.owner_fair_share decays it to now: half after one half-life');
SET LOCAL ROLE of_bob;
SELECT is((SELECT array_agg(owner) FROM tide.owner_fair_usage), ARRAY['of_bob']::text[],
          'a submitter reads only its own rows of tide.owner_fair_usage');
RESET ROLE;
UPDATE tide.queues SET name = 'qh2' WHERE name = 'qh';
SELECT is((SELECT array_agg(DISTINCT queue) FROM tide.owner_fair_usage), ARRAY['qh2'],
          'a renamed queue''s owner rows follow it');

SELECT * FROM finish();
ROLLBACK;
