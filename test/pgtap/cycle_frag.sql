-- A queue may choose the frag node order (R-L5): the cycle hands it to
-- the engine, which places its jobs (the order itself is unit-tested in
-- test/unit/test_engine_frag.c and replayed by tide-sim).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(5);

INSERT INTO tide.queues (name, quota, placement) VALUES ('f', 'gpu=16', 'frag');
SELECT is((SELECT placement FROM tide.queues WHERE name = 'f'), 'frag', 'a queue accepts placement frag');
SELECT tide.register_node('a', 'cpu=64, memory=256Gi, gpu=8', 'H100');
SELECT tide.register_node('b', 'cpu=64, memory=256Gi, gpu=8', 'H100');
-- An 8-GPU job and seven 1-GPU jobs: the small ones must not split the two
-- nodes between them, or the big one cannot run.
SELECT tide.submit('f', 'cpu=8, gpu=8', priority => 1) AS big \gset
CREATE TEMP TABLE small AS SELECT tide.submit('f', 'cpu=1, gpu=1', priority => 2) AS id FROM generate_series(1, 7);
SELECT isnt(tide.run_cycle(), NULL::bigint, 'a cycle with a frag queue runs');
SELECT is((SELECT count(*)::int FROM tide.jobs j JOIN small s ON s.id = j.id WHERE j.state = 'allocated'), 7,
          'the small jobs are placed');
SELECT is((SELECT count(DISTINCT a.node)::int FROM tide.allocations a JOIN small s ON s.id = a.job_id), 1,
          'all on one node');
SELECT is((SELECT state FROM tide.jobs WHERE id = :big), 'allocated', 'so the 8-GPU job still finds a whole node');

SELECT * FROM finish();
ROLLBACK;
