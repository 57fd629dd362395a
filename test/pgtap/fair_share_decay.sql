-- Fair share over time (R-O6): queues of equal priority ordered by their
-- usage averaged with tide.fair_share_half_life, over their quota.  The
-- clock is faked by moving tide.queue_fair_usage.updated_at back: with a
-- half-life of one day, a day later exactly half the old average is left.
-- Half-life 0 is the order by the usage now, exactly; the cycle keeps the
-- averages (one row per queue with a quota), tide.dry_run() writes none,
-- and tide.fair_share and tide.explain show them.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(37);

-- The averages of a queue, rounded to 3 places for comparison.
CREATE FUNCTION pg_temp.kept(q text) RETURNS numeric LANGUAGE sql AS $$
    SELECT round((f.decayed ->> 'gpu')::numeric, 3) FROM tide.queue_fair_usage f WHERE f.queue = q
$$;
-- The job the next cycle would place first (tide.dry_run, nothing written).
CREATE FUNCTION pg_temp.would_place() RETURNS bigint LANGUAGE sql AS $$
    SELECT min(d.job_id) FROM tide.dry_run() d WHERE d.kind = 'place'
$$;

-- Two queues of equal priority and quota, one free GPU.
INSERT INTO tide.queues (name, quota) VALUES ('qa', 'gpu=4'), ('qb', 'gpu=4');
INSERT INTO tide.queues (name) VALUES ('qn');        -- no quota: ranked last, no row
SELECT tide.register_node('f1', 'cpu=8, memory=64Gi, gpu=1');

-- the setting
SELECT is(current_setting('tide.fair_share_half_life'), '0', 'tide.fair_share_half_life defaults to 0');
SELECT is(tide._fair_share_half_life(), interval '0', 'as an interval: 0');
SET LOCAL tide.fair_share_half_life = '1d';
SELECT is(tide._fair_share_half_life(), interval '1 day', 'set to 1d: one day');
SELECT throws_ok($$SET LOCAL tide.fair_share_half_life = '400d'$$, '22023', NULL,
                 'at most 365 days');
SET LOCAL tide.fair_share_half_life = 0;

-- Lately qa used its whole quota, qb a quarter of it; neither holds anything now.
INSERT INTO tide.queue_fair_usage (queue, decayed, updated_at)
VALUES ('qa', '{"gpu": 4}', now()), ('qb', '{"gpu": 1}', now());
SELECT tide.submit('qa', 'gpu=1', name => 'a1') AS a1 \gset
SELECT tide.submit('qb', 'gpu=1', name => 'b1') AS b1 \gset

-- half-life 0: the usage now (both 0), then the name: qa first
SELECT is(pg_temp.would_place(), :a1::bigint, 'R-O4 with half-life 0: equal usage now, qa first by name');
SELECT is((SELECT array_agg(queue ORDER BY rank_among_siblings) FROM tide.fair_share), ARRAY['qa','qb','qn'],
          'tide.fair_share with half-life 0: ranks by the usage now');
SELECT is((SELECT count(*) FILTER (WHERE f.share IS DISTINCT FROM round(tide._dominant_share(u.usage, u.quota), 12))::int
             FROM tide.fair_share f JOIN tide.queue_usage u USING (queue)), 0,
          'with half-life 0 every share is usage / quota (R-O4), exactly');
SELECT is((SELECT (explain -> 'order_key' ->> 'queue_rank')::int FROM tide.explain(:a1) explain), 1,
          'tide.explain: qa''s job is in the first queue');

-- half-life 1 day: the averages order them
SET LOCAL tide.fair_share_half_life = '1d';
SELECT is(pg_temp.would_place(), :b1::bigint, 'R-O6: qa used more lately, qb''s job would be placed');
SELECT is((SELECT array_agg(queue ORDER BY rank_among_siblings) FROM tide.fair_share), ARRAY['qb','qa','qn'],
          'tide.fair_share ranks qb first');
SELECT is((SELECT share FROM tide.fair_share WHERE queue = 'qa'), 1::numeric, 'qa''s share: 4 / 4');
SELECT is((SELECT share FROM tide.fair_share WHERE queue = 'qn'), NULL, 'a queue without quota has no share');
SELECT is((SELECT explain -> 'order_key' -> 'queue_decayed' FROM tide.explain(:a1) explain), '{"gpu": 4}'::jsonb,
          'tide.explain''s order key shows the decayed usage');
SELECT is((SELECT (explain -> 'order_key' ->> 'queue_share')::numeric FROM tide.explain(:a1) explain), 1.0000,
          'and the share it orders by');
SELECT is((SELECT (explain ->> 'position_in_group')::int FROM tide.explain(:a1) explain), 2,
          'qa''s job is second in its group''s order');
SELECT is((SELECT count(*)::int FROM tide.queue_fair_usage WHERE updated_at <> now()), 0,
          'tide.dry_run() wrote no average');

-- the cycle places qb's job and keeps the averages
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle with half-life 1 day');
SELECT is((SELECT state FROM tide.jobs WHERE id = :b1), 'allocated', 'qb''s job is placed first');
SELECT is((SELECT state FROM tide.jobs WHERE id = :a1), 'pending', 'qa''s waits');
SELECT ok((SELECT bool_and(updated_at > now()) FROM tide.queue_fair_usage WHERE queue IN ('qa', 'qb')),
          'the cycle brought both averages up to its time');
SELECT ok(pg_temp.kept('qa') BETWEEN 3.999 AND 4 AND pg_temp.kept('qb') BETWEEN 1 AND 1.001,
          'decayed over the milliseconds since: qa still 4, qb still 1');
SELECT ok(NOT EXISTS (SELECT 1 FROM tide.queue_fair_usage WHERE queue = 'qn'), 'no row for a queue without quota');

-- a day later exactly half is left (qa holds nothing now)
UPDATE tide.queue_fair_usage SET decayed = '{"gpu": 4}', updated_at = now() - interval '1 day' WHERE queue = 'qa';
SELECT is((SELECT decayed FROM tide.fair_share WHERE queue = 'qa'), '{"gpu": 2}'::jsonb,
          'R-O6: one half-life later, half of qa''s average');
SET LOCAL tide.fair_share_half_life = '2d';
SELECT is((SELECT decayed FROM tide.fair_share WHERE queue = 'qa'), '{"gpu": 2.828427}'::jsonb,
          'a changed half-life needs no reset: the same row, decayed by 2^(-1/2)');
SET LOCAL tide.fair_share_half_life = '1d';
DELETE FROM tide.cycle_state;       -- the next cycle loads (no job changed)
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle a day after qa''s average');
SELECT ok(pg_temp.kept('qa') BETWEEN 1.999 AND 2, 'the cycle decayed it to half and wrote it');

-- The order flips as the averages decay: qb holds gpu=1 now (b1), qa
-- nothing.  Averages qa 4, qb 0.5: qb first; three days later qa's is
-- 0.5 (share 0.125), qb's 0.9375 (0.234): qa first.
UPDATE tide.queue_fair_usage SET decayed = CASE queue WHEN 'qa' THEN '{"gpu": 4}'::jsonb ELSE '{"gpu": 0.5}' END,
                                 updated_at = now();
SELECT is((SELECT array_agg(queue ORDER BY rank_among_siblings) FROM tide.fair_share), ARRAY['qb','qa','qn'],
          'averages 4 and 0.5: qb first');
UPDATE tide.queue_fair_usage SET updated_at = now() - interval '3 days';
SELECT is((SELECT array_agg(queue ORDER BY rank_among_siblings) FROM tide.fair_share), ARRAY['qa','qb','qn'],
          'three half-lives later: qa first');
SELECT tide.submit('qb', 'gpu=1', name => 'b2', priority => 5) AS b2 \gset
SELECT tide.register_node('f2', 'cpu=8, memory=64Gi, gpu=1');
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle with one more free GPU');
SELECT is((SELECT array_agg(name ORDER BY name) FROM tide.jobs WHERE state = 'allocated'), ARRAY['a1','b1'],
          'the cycle places qa''s job, not qb''s higher-priority one');

-- a resource group's cycle reads and writes only its group's averages
INSERT INTO tide.queues (name, quota, resource_group) VALUES ('qg', 'gpu=1', 'g2');
INSERT INTO tide.queue_fair_usage (queue, decayed, updated_at) VALUES ('qg', '{"gpu": 1}', now() - interval '1 day');
SELECT ok(tide.run_cycle('default') IS NOT NULL, 'a cycle of resource group default');
SELECT is((SELECT updated_at FROM tide.queue_fair_usage WHERE queue = 'qg'), now() - interval '1 day',
          'it leaves group g2''s average alone');
SELECT ok(tide.run_cycle('g2') IS NOT NULL, 'a cycle of resource group g2');
SELECT ok(pg_temp.kept('qg') BETWEEN 0.499 AND 0.5, 'it decays g2''s average: a day later, half');

-- renaming or deleting a queue takes its row along
INSERT INTO tide.queues (name, quota) VALUES ('qz', 'gpu=1');
INSERT INTO tide.queue_fair_usage (queue, decayed, updated_at) VALUES ('qz', '{"gpu": 1}', now());
UPDATE tide.queues SET name = 'qy' WHERE name = 'qz';
SELECT is(pg_temp.kept('qy'), 1.000, 'a renamed queue keeps its average');
DELETE FROM tide.queues WHERE name = 'qy';
SELECT ok(NOT EXISTS (SELECT 1 FROM tide.queue_fair_usage WHERE queue IN ('qy', 'qz')), 'a deleted queue''s average goes with it');
SAVEPOINT truncated;
TRUNCATE tide.queues, tide.nodes, tide.jobs, tide.job_tasks, tide.allocations, tide.evictions,
         tide.eviction_holds, tide.job_events, tide.cycles, tide.reason_backlog;
SELECT is((SELECT count(*)::int FROM tide.queue_fair_usage), 0, 'so do all when tide.queues is truncated');
ROLLBACK TO SAVEPOINT truncated;

SELECT * FROM finish();
ROLLBACK;
