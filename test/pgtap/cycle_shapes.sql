-- The typical workload of frag queues (R-L5): an administrator's shapes
-- (tide.workload_shapes) win over the recent submissions'
-- (tide.recent_shapes, remade by the cycle at most every
-- tide.frag_shapes_refresh seconds), and they change the node frag picks.
--
-- Every group below has a node of 8 GPUs (aN) and one of 4 (bN).  A 1-GPU
-- job grows the fragmentation for 4-GPU shapes only on bN (3 GPUs left
-- cannot hold one), so with 4-GPU shapes typical it goes to aN; for 1-GPU
-- shapes both are alike and the tie goes to the fuller node, bN.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(31);

INSERT INTO tide.queues (name, resource_group, quota)
SELECT 'f' || g, 'g' || g, 'gpu=64' FROM generate_series(1, 3) g;
SELECT is((SELECT array_agg(DISTINCT placement) FROM tide.queues), ARRAY['frag'], 'the queues place by frag, the default');
SELECT tide.register_node(n || g, ('cpu=64, memory=256Gi, gpu=' || CASE n WHEN 'a' THEN 8 ELSE 4 END)::tide.resvec, 'H100',
                          resource_group => 'g' || g)
  FROM generate_series(1, 3) g, unnest(ARRAY['a', 'b']) n;
-- pg_tap runs in one transaction: now() stands still, so a refresh is
-- "older than 60 s" only before the first.
SET tide.frag_shapes_refresh = 60;

-- ---------------------------------------------------------------- recent
SELECT is((SELECT refreshed_at FROM tide.recent_shapes_state), NULL, 'no refresh before the first cycle');
SELECT tide.submit('f1', 'cpu=1, gpu=1') AS j1 \gset
SELECT isnt(tide.run_cycle('g1'), NULL::bigint, 'a cycle of g1');
SELECT isnt((SELECT refreshed_at FROM tide.recent_shapes_state), NULL, 'the cycle refreshed the recent shapes');
SELECT results_eq($$SELECT resource_group, request::text, weight, jobs FROM tide.recent_shapes$$,
                  $$VALUES ('g1', 'cpu=1, gpu=1', 1::float8, 1)$$, 'the recent shapes: g1''s one job');
SELECT is((SELECT node FROM tide.allocations WHERE job_id = :j1), 'b1', 'with 1-GPU shapes the tie goes to the fuller node');

-- g3: three 4-GPU jobs submitted (and withdrawn), then a 1-GPU job
SELECT tide.cancel(tide.submit('f3', 'cpu=4, gpu=4')) FROM generate_series(1, 3);
SELECT tide.submit('f3', 'cpu=1, gpu=1') AS j3 \gset
SELECT is((SELECT node FROM tide.dry_run() WHERE job_id = :j3), 'b3',
          'within tide.frag_shapes_refresh the recent shapes stay as they were');
SET tide.frag_shapes_refresh = 0;
SELECT is((SELECT node FROM tide.dry_run() WHERE job_id = :j3), 'b3', 'tide.dry_run does not refresh them');
SELECT is((SELECT count(*)::int FROM tide.recent_shapes), 1, 'nor writes them');
SELECT isnt(tide.run_cycle('g3'), NULL::bigint, 'a cycle of g3');
SELECT results_eq($$SELECT resource_group, request::text, weight, jobs FROM tide.recent_shapes ORDER BY 1, 2$$,
                  $$VALUES ('g1', 'cpu=1, gpu=1', 1::float8, 1), ('g3', 'cpu=1, gpu=1', 1, 1),
                           ('g3', 'cpu=4, gpu=4', 3, 3)$$, 'which it refreshed: the last jobs of each group');
SELECT is((SELECT node FROM tide.allocations WHERE job_id = :j3), 'a3',
          'with 4-GPU shapes recent, frag keeps b3 whole for them');

-- ---------------------------------------------------------------- admin
SELECT tide.submit('f2', 'cpu=1, gpu=1') AS j2 \gset
INSERT INTO tide.workload_shapes (name, resource_group, request) VALUES ('four', 'g2', 'cpu=4, gpu=4');
SELECT isnt(tide.run_cycle('g2'), NULL::bigint, 'a cycle of g2');
SELECT ok(EXISTS (SELECT 1 FROM tide.recent_shapes WHERE resource_group = 'g2' AND request::text = 'cpu=1, gpu=1'),
          'g2''s recent shapes are 1-GPU');
SELECT is((SELECT node FROM tide.allocations WHERE job_id = :j2), 'a2', 'but the administrator''s 4-GPU shape wins');

-- a shape for every group: 8 GPUs, which neither a3 (7 left) nor b3 can
-- hold any more, so both are alike again and the fuller wins
INSERT INTO tide.workload_shapes (name, request) VALUES ('eight', 'cpu=8, gpu=8');
SELECT tide.submit('f3', 'cpu=1, gpu=1') AS j3b \gset
SELECT isnt(tide.run_cycle('g3'), NULL::bigint, 'another cycle of g3');
SELECT is((SELECT node FROM tide.allocations WHERE job_id = :j3b), 'b3', 'a shape of no group applies to every group');
-- a shape no node could hold (a card no node has) changes nothing
INSERT INTO tide.workload_shapes (name, resource_group, request, gpu_type) VALUES ('nocard', 'g2', 'gpu=1', 'B200');
SELECT lives_ok($$SELECT tide.run_cycle('g2')$$, 'a shape of a card type no node has is left out');

-- no recent shapes: frag uses the pending jobs' requests
SET tide.frag_shapes_jobs = 0;
DELETE FROM tide.workload_shapes;
SELECT tide.cancel(tide.submit('f1', 'cpu=4, gpu=4')) FROM generate_series(1, 3);
SELECT tide.submit('f1', 'cpu=1, gpu=1') AS j1b \gset
SELECT is((SELECT node FROM tide.dry_run() WHERE job_id = :j1b), 'b1', 'tide.frag_shapes_jobs = 0: no recent shapes');
SELECT is(tide.refresh_workload_shapes(), 0, 'and the refresh keeps none');
SELECT is(tide.refresh_workload_shapes(4), 2, 'the refresh of the last 4 jobs: two shapes');
SELECT is((SELECT jobs_read FROM tide.recent_shapes_state), 4, 'from 4 jobs');

-- ---------------------------------------------------------------- bad rows
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, request) VALUES ('cpu', 'cpu=4')$$,
                 '23514', 'workload shape "cpu" asks no GPU: cpu=4', 'a shape without GPUs is refused');
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, request) VALUES ('odd', 'gpu=1.5')$$,
                 '23514', 'GPU request 1.5 of workload shape "odd" is not a whole number', 'a fraction above one GPU');
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, request, weight) VALUES ('w', 'gpu=1', 0)$$,
                 '23514', 'weight of workload shape "w" must be a positive finite number, not 0', 'a weight of 0');
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, request, weight) VALUES ('w', 'gpu=1', 'NaN')$$,
                 '23514', 'weight of workload shape "w" must be a positive finite number, not NaN', 'a weight of NaN');
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, request, node_selector) VALUES ('s', 'gpu=1', '[]')$$,
                 '23514', 'node_selector of workload shape "s" must be a JSON object, not array', 'a selector not an object');
SELECT throws_ok($$INSERT INTO tide.workload_shapes (name, resource_group, request) VALUES ('g', '', 'gpu=1')$$,
                 '23514', 'resource_group of workload shape "g" must not be empty', 'an empty resource group');
SELECT throws_ok($$SELECT tide.refresh_workload_shapes(-1)$$, '22023', 'jobs must not be negative, not -1',
                 'a negative job count');

-- ---------------------------------------------------------------- privileges
SELECT ok(has_table_privilege('tide_admin', 'tide.workload_shapes', 'INSERT, UPDATE, DELETE')
          AND has_function_privilege('tide_admin', 'tide.refresh_workload_shapes(integer)', 'EXECUTE'),
          'administrators set the shapes and refresh the recent ones');
SELECT ok(has_table_privilege('tide_reader', 'tide.workload_shapes', 'SELECT')
          AND has_table_privilege('tide_reader', 'tide.recent_shapes', 'SELECT')
          AND NOT has_table_privilege('tide_reader', 'tide.workload_shapes', 'INSERT')
          AND NOT has_function_privilege('tide_reader', 'tide.refresh_workload_shapes(integer)', 'EXECUTE'),
          'readers read them');

SELECT * FROM finish();
ROLLBACK;
