-- tide.demand: the pending work the free resources cannot start now, by
-- request shape, with the fresh nodes of each registered node shape that
-- would start it; waiting, idle and limit-blocked jobs left out.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(28);

SELECT is((SELECT count(*) FROM tide.demand), 0::bigint, 'nothing pending: no demand');

-- n1 (H100) full; n2 (H100) all free; n4 (H100, zone b, 4 GPUs) and n5
-- (A100) full; n3 has no GPU.
SELECT tide.register_node('n4', 'cpu=32, memory=256Gi, gpu=4', 'H100', '{"zone": "b"}');
SELECT tide.register_node('n5', 'cpu=32, memory=256Gi, gpu=8', 'A100');
SELECT tide.submit('q1', 'cpu=8, gpu=8') AS run1, tide.submit('q1', 'gpu=4') AS run4,
       tide.submit('q1', 'gpu=8') AS run5 \gset
SELECT pg_temp.place(:run1, ARRAY['n1']), pg_temp.place(:run4, ARRAY['n4']), pg_temp.place(:run5, ARRAY['n5']);

-- A job that fits the free node is no demand.
SELECT tide.submit('q1', 'cpu=8, gpu=8') AS fits \gset
SELECT tide.submit('q1', 'cpu=1, gpu=1') AS small \gset
SELECT is((SELECT count(*) FROM tide.demand), 0::bigint, 'jobs that fit a free node are no demand');

-- A gang of 2 x 8 GPUs after it: the free node is dealt to the first job
-- (walk order), the gang needs two fresh 8-GPU nodes.
SELECT tide.submit('q1', 'cpu=8, gpu=8', replicas => 2) AS gang \gset
CREATE TEMP VIEW d AS SELECT * FROM tide.demand;
SELECT results_eq($$SELECT jobs, replicas, node_gpu_type, nodes_registered, example_node, replicas_per_node, nodes_needed, never_fits
                      FROM d WHERE request::text = 'cpu=8, gpu=8' AND gpu_type IS NULL ORDER BY node_gpu_type$$,
                  $$VALUES (1::bigint, 2::bigint, 'A100', 1::bigint, 'n5', 1::bigint, 2::bigint, false),
                           (1::bigint, 2::bigint, 'H100', 2::bigint, 'n1', 1::bigint, 2::bigint, false)$$,
                  'a gang of 2 x 8 GPUs: two fresh nodes of either 8-GPU shape (alternatives), the job that fits not counted');
SELECT is((SELECT node_capacity::text FROM d WHERE request::text = 'cpu=8, gpu=8' AND node_gpu_type = 'H100'),
          'cpu=32, memory=256Gi, gpu=8'::tide.resvec::text, 'the node shape''s capacity');
SELECT is((SELECT count(*) FROM d WHERE request::text = 'cpu=1, gpu=1'), 0::bigint, 'the small job fits beside it: no row');

-- A node selector: only the shape with the label, 2 replicas a node.
SELECT tide.submit('q1', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}') AS sel1,
       tide.submit('q1', 'cpu=2, gpu=2', replicas => 3, node_selector => '{"zone": "b"}') AS sel3 \gset
SELECT results_eq($$SELECT jobs, replicas, node_labels, example_node, replicas_per_node, nodes_needed
                      FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'$$,
                  $$VALUES (2::bigint, 4::bigint, '{"zone": "b"}'::jsonb, 'n4', 2::bigint, 2::bigint)$$,
                  'selector-limited: only the labelled shape, 4 replicas at 2 a node need 2 nodes');

-- A card type: only nodes of that type; a separate shape from the untyped request.
SELECT tide.submit('q1', 'cpu=8, gpu=8', gpu_type => 'A100') AS typed \gset
SELECT results_eq($$SELECT jobs, node_gpu_type, example_node, nodes_needed FROM d WHERE gpu_type = 'A100'$$,
                  $$VALUES (1::bigint, 'A100', 'n5', 1::bigint)$$,
                  'gpu_type: only the shape of that card type');

-- Jobs no registered shape could ever run: said so, counted for no shape.
SELECT tide.submit('q1', 'gpu=4', gpu_type => 'B200') AS b200, tide.submit('q1', 'gpu=16') AS huge,
       tide.submit('q1', 'cpu=24') AS cpu24 \gset
SELECT results_eq($$SELECT request::text, gpu_type, jobs, replicas, node_capacity IS NULL, nodes_registered, nodes_needed
                      FROM d WHERE never_fits ORDER BY request::text$$,
                  $$VALUES ('cpu=24', NULL, 1::bigint, 1::bigint, true, NULL::bigint, NULL::bigint),
                           ('gpu=16', NULL, 1::bigint, 1::bigint, true, NULL, NULL),
                           ('gpu=4', 'B200', 1::bigint, 1::bigint, true, NULL, NULL)$$,
                  'a card type no node has, a replica larger than any node, CPU work larger than the CPU node: never_fits, no node shape');
SELECT is((SELECT count(*) FROM d WHERE request::text IN ('gpu=16', 'cpu=24') AND NOT never_fits), 0::bigint,
          'and no node shape row for them');

-- The gang minimum: 2 of 4 replicas.
SELECT tide.submit('q1', 'cpu=1, gpu=2', replicas => 4, min_available => 2, node_selector => '{"zone": "b"}') AS gmin \gset
SELECT results_eq($$SELECT replicas, nodes_needed FROM d WHERE request::text = 'cpu=1, gpu=2'$$,
                  $$VALUES (2::bigint, 1::bigint)$$, 'a gang counts its minimum (min_available), not every replica');

-- A share of a GPU: two replicas a GPU, 4 GPUs a node.
SELECT tide.submit('q1', 'cpu=1, gpu=0.5', replicas => 9, node_selector => '{"zone": "b"}') AS half \gset
SELECT results_eq($$SELECT replicas, replicas_per_node, nodes_needed FROM d WHERE request::text = 'cpu=1, gpu=0.5'$$,
                  $$VALUES (9::bigint, 8::bigint, 2::bigint)$$, 'a share of a GPU: 8 halves on a 4-GPU node, 9 need 2 nodes');

-- Left out: held, waiting on a dependency, deferred, idle.
SELECT tide.submit('q1', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}', hold => true) AS held \gset
SELECT tide.submit('q1', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}', after => ARRAY[:gang]::bigint[]) AS dep \gset
SELECT tide.submit('q1', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}', begin_at => now() + interval '1 hour') AS later \gset
SELECT tide.submit('q1', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}', idle => true) AS idle \gset
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 2::bigint,
          'held, dependency-waiting, deferred and idle jobs are no demand');
SELECT is((SELECT replicas FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 4::bigint,
          'nor their replicas');
-- A released job counts.
SELECT tide.release(:held);
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 3::bigint,
          'a released job counts again');
SELECT tide.hold(:held);

-- Limits: a new node would not start a job over its queue's capability,
-- an ancestor's, or its owner's limit (R-A1, R-A3, R-A4).
INSERT INTO tide.queues (name, capability) VALUES ('qc', 'gpu=1');
SELECT tide.submit('qc', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}') AS capped \gset
INSERT INTO tide.queues (name, owner_capability) VALUES ('qo', 'gpu=1');
SELECT tide.submit('qo', 'cpu=2, gpu=2', node_selector => '{"zone": "b"}') AS owned \gset
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 2::bigint,
          'a job over its capability or its owner limit is no node demand');
-- held usage counts against the capability
UPDATE tide.queues SET capability = 'gpu=4' WHERE name = 'qc';
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 3::bigint,
          'within a larger capability it counts');
SELECT tide.submit('qc', 'gpu=3') AS qc_run \gset
SELECT pg_temp.place(:qc_run, ARRAY['n2']);
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 2::bigint,
          'what the queue holds counts against it: 3 held + 2 asked > 4');
-- an ancestor's capability caps the subtree
UPDATE tide.queues SET capability = NULL WHERE name = 'qc';
INSERT INTO tide.queues (name, capability) VALUES ('top', 'gpu=4');
UPDATE tide.queues SET parent = 'top' WHERE name = 'qc';
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 2::bigint,
          'a parent''s capability caps its children''s jobs');
UPDATE tide.queues SET capability = 'gpu=8' WHERE name = 'top';
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 3::bigint,
          'and a larger one lets them count');

-- A job waiting for the evictions made for it needs no new node (R-E6).
INSERT INTO tide.evictions (job_id, reason, preemptor_job_id) VALUES (:run4, 'reclaimed', :sel1);
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 2::bigint,
          'a preemptor whose victims are being stopped is no demand');
UPDATE tide.evictions SET acked_at = now() WHERE preemptor_job_id = :sel1;
SELECT is((SELECT jobs FROM d WHERE node_selector = '{"zone": "b"}' AND request::text = 'cpu=2, gpu=2'), 3::bigint,
          'once they are stopped (acked), it counts again');

-- Over its quota a job still counts: it borrows what new nodes add.
SELECT is((SELECT jobs FROM d WHERE request::text = 'cpu=8, gpu=8' AND gpu_type IS NULL AND node_gpu_type = 'H100'), 2::bigint,
          'q1 is over its quota of 8 GPUs, its jobs still count (now that n2 is partly used, the first 8-GPU job too)');

-- Walk order: a higher priority job is dealt the free room first.
SELECT tide.submit('q1', 'cpu=1, gpu=1', priority => 9) AS urgent, tide.submit('q1', 'cpu=1, gpu=1', replicas => 5) AS five \gset
SELECT results_eq($$SELECT jobs, replicas FROM d WHERE request::text = 'cpu=1, gpu=1' AND node_gpu_type = 'H100' AND node_labels = '{}'$$,
                  $$VALUES (1::bigint, 5::bigint)$$,
                  '5 GPUs free on n2: the two 1-GPU jobs by priority start, the 5-replica gang is short');

-- Labels compare as text, as the cycle compares them (R-L4).
SELECT tide.submit('q1', 'cpu=2, gpu=1', node_selector => '{"rack": 7}') AS rack \gset
SELECT is((SELECT never_fits FROM d WHERE node_selector = '{"rack": 7}'), true, 'no node with the label: never_fits');
SELECT tide.register_node('n6', 'cpu=8, memory=64Gi, gpu=1', 'H100', '{"rack": "7"}');
SELECT tide.submit('q1', 'gpu=1') AS run6 \gset
SELECT pg_temp.place(:run6, ARRAY['n6']);
SELECT results_eq($$SELECT example_node, never_fits, nodes_needed FROM d WHERE node_selector = '{"rack": 7}'$$,
                  $$VALUES ('n6', false, 1::bigint)$$, 'the selector 7 matches the label "7"');

-- CPU-only work: only the node without GPUs (GPU nodes take none here, R-L4).
SELECT tide.submit('q1', 'cpu=16') AS run3 \gset
SELECT pg_temp.place(:run3, ARRAY['n3']);
SELECT tide.submit('q1', 'cpu=8', replicas => 3) AS cpu8 \gset
SELECT results_eq($$SELECT example_node, replicas_per_node, nodes_needed FROM d WHERE request::text = 'cpu=8'$$,
                  $$VALUES ('n3', 2::bigint, 2::bigint)$$, 'CPU-only work: the CPU node''s shape alone, 2 replicas a node');

-- Who may read it: administrators and readers, not submitters.
SET LOCAL ROLE tap_reader;
SELECT ok((SELECT count(*) FROM tide.demand) > 0, 'a reader reads it');
RESET ROLE;
SET LOCAL ROLE tap_alice;
SELECT throws_ok('SELECT * FROM tide.demand', '42501', NULL, 'a submitter may not (it counts every owner''s work)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
