-- Queue trees through tide.run_cycle() (R-O5, R-A3, R-E7): a capability at
-- every level caps its subtree and the pending reason names the level;
-- siblings are walked by priority, then share, at every level; borrowing
-- goes to the nearest lender first; reclaim takes back only from the subtree
-- that borrowed the reclaiming queue's side's share (the worked example of
-- docs/policy.md R-E7, with the borrowers started in both orders), nearest
-- subtree first.  Launchers are simulated in SQL.  The whole test is one
-- transaction, so every allocation has the same start time: the least-harm
-- order (R-E4) then takes the larger job id first, which is what the
-- "started before / after" cases below turn around.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(29);

-- Five nodes of 4 GPUs: 20 GPUs.  A and B with quota 10 each, a1, a2, b1,
-- b2 with 5 each; capabilities as the case asks.
CREATE FUNCTION pg_temp.reset(cap_a text DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.evictions;
    DELETE FROM tide.jobs;
    DELETE FROM tide.nodes;
    UPDATE tide.queues SET parent = NULL;
    DELETE FROM tide.queues;
    FOR i IN 1 .. 5 LOOP
        PERFORM tide.register_node('n' || i, 'cpu=64, gpu=4');
    END LOOP;
    INSERT INTO tide.queues (name, quota, capability) VALUES ('A', 'gpu=10', cap_a::tide.resvec), ('B', 'gpu=10', NULL);
    INSERT INTO tide.queues (name, parent, quota) VALUES
        ('a1', 'A', 'gpu=5'), ('a2', 'A', 'gpu=5'), ('b1', 'B', 'gpu=5'), ('b2', 'B', 'gpu=5');
END $$;

-- n one-GPU jobs in queue q; their ids
CREATE FUNCTION pg_temp.sub(q text, n int, prio int DEFAULT 0) RETURNS bigint[] LANGUAGE sql AS $$
    SELECT array_agg(tide.submit(q, 'cpu=1, gpu=1'::tide.resvec, priority => prio) ORDER BY i)
      FROM generate_series(1, n) i;
$$;
CREATE FUNCTION pg_temp.cycle_and_start() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM tide.run_cycle();
    PERFORM tide.started(a.id) FROM tide.allocations a WHERE a.state = 'assigned';
END $$;
-- GPUs the live allocations of a queue hold
CREATE FUNCTION pg_temp.holds(q text) RETURNS numeric LANGUAGE sql AS $$
    SELECT coalesce(sum(tide.get(a.resources, 'gpu')), 0)
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
     WHERE a.state IN ('assigned', 'running') AND j.queue = q;
$$;
CREATE FUNCTION pg_temp.evicted(q text) RETURNS int LANGUAGE sql AS $$
    SELECT count(*)::int FROM tide.evictions e JOIN tide.jobs j ON j.id = e.job_id WHERE j.queue = q;
$$;
-- the evicted allocations stop (their launchers report)
CREATE FUNCTION pg_temp.stop_evicted() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.state = 'releasing';
$$;

-- ---------------------------------------------------------------- R-E7, the worked example
-- b1 borrows b2's share, a1 borrows a2's; a1's jobs are the newer ones
SELECT pg_temp.reset();
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('a1', 10);
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('a1') + pg_temp.holds('b1'), 20::numeric, 'setup: a1 and b1 hold 10 each, the cluster is full');
SELECT pg_temp.sub('b2', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('b1'), 5, 'R-E7: b2 takes back its share from b1, its sibling that borrowed it');
SELECT is(pg_temp.evicted('a1'), 0, 'R-E7: a1 is not evicted for B (A is within its quota), though its jobs are the newer');
SELECT pg_temp.stop_evicted();
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('b2'), 5::numeric, 'R-E7: b2 runs its 5 GPUs on what b1 gave back');
SELECT is(pg_temp.holds('a1'), 10::numeric, 'R-E7: a1 keeps its 10');

-- the same with a1's jobs the older ones
SELECT pg_temp.reset();
SELECT pg_temp.sub('a1', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('b2', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('b1'), 5, 'R-E7, started the other way round: b1 gives back 5');
SELECT is(pg_temp.evicted('a1'), 0, 'R-E7, started the other way round: a1 still gives back nothing');

-- cross-organisation: B holds 20 (b1 and b2 10 each), a1 asks 5
SELECT pg_temp.reset();
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.sub('b2', 10);
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('b1') + pg_temp.holds('b2'), 20::numeric, 'cross: B holds the whole cluster');
SELECT pg_temp.sub('a1', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('b1') + pg_temp.evicted('b2'), 5, 'R-E7 across organisations: A''s job takes back 5 from B, which borrowed them');
SELECT pg_temp.stop_evicted();
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('a1'), 5::numeric, 'R-E7 across organisations: a1 runs its 5');

-- nearest first: a1 holds 8 (3 of a2's), B 12 (b1 7, b2 5: 2 of A's); a2 asks 5
SELECT pg_temp.reset();
SELECT pg_temp.sub('a1', 8);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('b2', 5);
SELECT pg_temp.sub('b1', 7);
SELECT pg_temp.cycle_and_start();
SELECT is(ARRAY[pg_temp.holds('a1'), pg_temp.holds('b1'), pg_temp.holds('b2')], ARRAY[8, 7, 5]::numeric[],
          'nearest: setup a1 8, b1 7, b2 5');
SELECT pg_temp.sub('a2', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('a1'), 3, 'R-E7 nearest first: a1 gives back the 3 it borrowed from a2 first (B''s jobs are newer)');
SELECT is(pg_temp.evicted('b1'), 2, 'R-E7 nearest first: then b1 the 2 that B borrowed from A');
SELECT is(pg_temp.evicted('b2'), 0, 'R-E7: b2, within its quota, gives back nothing although B is above its own');

-- a queue above the victim that is not reclaimable protects its subtree
SELECT pg_temp.reset();
UPDATE tide.queues SET reclaimable = false WHERE name = 'B';
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.sub('b2', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('a1', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('b1') + pg_temp.evicted('b2'), 0, 'R-E7: B is not reclaimable, so nothing under it is reclaimed for A');

-- ---------------------------------------------------------------- R-A3 capability at a level
SELECT pg_temp.reset('gpu=12');
SELECT pg_temp.sub('a1', 9);
SELECT pg_temp.sub('a2', 6);
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('a1') + pg_temp.holds('a2'), 12::numeric, 'R-A3: A''s capability of 12 caps a1 and a2 together (the cluster has 20)');
SELECT ok((SELECT bool_and(pending_reason LIKE '%queue A (above a%) gpu capability: 12 used + 1 asked > 12%')
             FROM tide.jobs WHERE state = 'pending' AND queue IN ('a1', 'a2')),
          'R-A3: the pending reason names the level whose capability blocks');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE state = 'pending' AND queue IN ('a1', 'a2')), 3,
          'R-A3: three jobs wait');
SELECT is((SELECT b ->> 'rule' FROM tide.jobs x, jsonb_array_elements(tide.explain(x.id) -> 'blocking') b
            WHERE x.state = 'pending' AND x.queue = 'a2' AND b ->> 'queue' = 'A' LIMIT 1), 'R-A3',
          'R-A3: tide.explain names the level whose capability blocks, with its rule');
SELECT is((SELECT tide.explain(x.id) #> '{order_key,levels}' -> 0 ->> 'queue' || '/' ||
                  (tide.explain(x.id) #> '{order_key,levels}' -> 1 ->> 'queue')
             FROM tide.jobs x WHERE x.state = 'pending' AND x.queue = 'a2' LIMIT 1), 'A/a2',
          'R-O5: tide.explain''s order key has a level per queue of the path, top first');
-- a minimum above an upper capability can never run
SELECT tide.submit('a1', 'cpu=1, gpu=4'::tide.resvec, replicas => 4);
SELECT pg_temp.cycle_and_start();
SELECT alike((SELECT pending_reason FROM tide.jobs WHERE queue = 'a1' AND unschedulable),
            '%queue A gpu capability is 12, the job needs 16%',
            'R-A2: a minimum above a capability above the leaf is unschedulable, naming that queue');

-- ---------------------------------------------------------------- R-O5 order by level
-- A and B, equal priority: a1, a2, b1, b2 each want 10 GPUs of 1; shares at
-- the top level decide between A and B, then within each
SELECT pg_temp.reset();
SELECT pg_temp.sub('a1', 10);
SELECT pg_temp.sub('a2', 10);
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.sub('b2', 10);
SELECT pg_temp.cycle_and_start();
SELECT is(ARRAY[pg_temp.holds('a1'), pg_temp.holds('a2'), pg_temp.holds('b1'), pg_temp.holds('b2')],
          ARRAY[5, 5, 5, 5]::numeric[], 'R-O5: every leaf gets its quota when all ask');
-- B has priority over A: B's teams go first at the top level
SELECT pg_temp.reset();
UPDATE tide.queues SET priority = 1 WHERE name = 'B';
UPDATE tide.queues SET priority = 5 WHERE name = 'a1';
UPDATE tide.queues SET capability = 'gpu=12' WHERE name = 'B';
SELECT pg_temp.sub('a1', 20);
SELECT pg_temp.sub('b1', 20);
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('b1'), 12::numeric,
          'R-O5: B outranks A at the top level, so b1 fills B''s capability first, a1''s own priority of 5 notwithstanding');
SELECT is(pg_temp.holds('a1'), 8::numeric, 'R-O5: a1 gets the rest');
-- tide.explain's walk order agrees: every pending b1 job is ahead of every a1 job
SELECT ok((SELECT max((tide.explain(x.id) ->> 'position_in_group')::int) FROM tide.jobs x
            WHERE x.state = 'pending' AND x.queue = 'b1' AND NOT x.unschedulable) <
          (SELECT min((tide.explain(x.id) ->> 'position_in_group')::int) FROM tide.jobs x
            WHERE x.state = 'pending' AND x.queue = 'a1'),
          'R-O5: in tide.explain''s order B''s jobs come before A''s though a1''s own priority is higher');

-- ---------------------------------------------------------------- leaves only
SELECT pg_temp.reset();
SELECT pg_temp.sub('a1', 1);
SELECT pg_temp.cycle_and_start();
SELECT is(pg_temp.holds('A'), 0::numeric, 'jobs live in leaves: the inner queue A holds nothing of its own');
SELECT is((SELECT count(*)::int FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id WHERE j.queue = 'a1'), 1,
          'a1''s job runs in a1');

-- ---------------------------------------------------------------- flat queues unchanged
SELECT pg_temp.reset();
UPDATE tide.queues SET parent = NULL;
DELETE FROM tide.queues WHERE name IN ('A', 'B');
SELECT pg_temp.sub('b1', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('a1', 10);
SELECT pg_temp.cycle_and_start();
SELECT pg_temp.sub('b2', 5);
SELECT tide.run_cycle();
SELECT is(pg_temp.evicted('a1'), 5, 'flat queues: R-E1 as before, the newest borrower (a1) is evicted first');
SELECT is(pg_temp.evicted('b1'), 0, 'flat queues: b1''s older jobs stay');

SELECT * FROM finish();
ROLLBACK;
