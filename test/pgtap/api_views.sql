-- The views tide.pending, tide.queue_usage and tide.node_usage.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(18);

-- Pending order per queue: non-idle before idle, retry lane, priority, age, id.
SELECT tide.submit('q1', 'gpu=1', priority => 1) AS p1, tide.submit('q1', 'gpu=1', priority => 5) AS p5,
       tide.submit('q1', 'gpu=1', priority => 9, idle => true) AS pi, tide.submit('q1', 'gpu=1', priority => 5) AS p5b,
       tide.submit('qi', 'gpu=1') AS q \gset
SELECT results_eq($$SELECT job_id, position FROM tide.pending WHERE queue = 'q1' ORDER BY position$$,
                  format('VALUES (%s::bigint, 1::bigint), (%s, 2), (%s, 3), (%s, 4)', :p5, :p5b, :p1, :pi),
                  'priority, then age and id, idle jobs last');
SELECT is((SELECT position FROM tide.pending WHERE job_id = :q), 1::bigint, 'positions are per queue');
-- A retry goes first in its queue.
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS f \gset
SELECT pg_temp.place(:f, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:f))[1], 1);
SELECT results_eq(format('SELECT position, retry FROM tide.pending WHERE job_id = (SELECT id FROM tide.jobs WHERE retry_of = %s)', :f),
                  $$VALUES (1::bigint, true)$$, 'the retry lane comes first');
SELECT is((SELECT waiting_since FROM tide.pending WHERE job_id = :p1), (SELECT created_at FROM tide.jobs WHERE id = :p1), 'waiting since submission');
UPDATE tide.jobs SET pending_reason = 'queue gpu quota exhausted' WHERE id = :p1;
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = :p1), 'queue gpu quota exhausted', 'the pending reason');

-- Usage: q1 has quota gpu=8; place 6 GPUs of non-idle work, 1 idle, 2 more borrowing.
SELECT tide.submit('q1', 'cpu=2, gpu=3', replicas => 2) AS a, tide.submit('q1', 'gpu=1', idle => true) AS i,
       tide.submit('q1', 'gpu=2') AS b \gset
SELECT pg_temp.place(:a, ARRAY['n1', 'n2']);
SELECT pg_temp.place(:i, ARRAY['n2']);
SELECT pg_temp.place(:b, ARRAY['n1']);
SELECT tide.submit('q1', 'gpu=2') AS c \gset
SELECT pg_temp.place(:c, ARRAY['n1']);
SELECT results_eq($$SELECT tide.get(usage, 'gpu'), tide.get(guaranteed, 'gpu'), tide.get(borrowed, 'gpu'),
                           tide.get(idle_usage, 'gpu'), tide.get(usage, 'cpu'), tide.get(guaranteed, 'cpu'), tide.get(borrowed, 'cpu')
                      FROM tide.queue_usage WHERE queue = 'q1'$$,
                  $$VALUES (10::numeric, 8::numeric, 2::numeric, 1::numeric, 4::numeric, 4::numeric, 0::numeric)$$,
                  'usage above quota is borrowed; a quota limits only what it names');
SELECT results_eq($$SELECT pending, running, evicting FROM tide.queue_usage WHERE queue = 'q1'$$,
                  $$VALUES (5::bigint, 4::bigint, 0::bigint)$$, 'job counts');
SELECT results_eq($$SELECT tide.get(usage, 'gpu'), tide.get(guaranteed, 'gpu'), tide.get(borrowed, 'gpu'), pending
                      FROM tide.queue_usage WHERE queue = 'qi'$$,
                  $$VALUES (0::numeric, 0::numeric, 0::numeric, 1::bigint)$$, 'a queue without usage');
INSERT INTO tide.queues (name) VALUES ('free');
SELECT tide.submit('free', 'gpu=1') AS fr \gset
SELECT pg_temp.place(:fr, ARRAY['n2']);
SELECT results_eq($$SELECT tide.get(guaranteed, 'gpu'), tide.get(borrowed, 'gpu') FROM tide.queue_usage WHERE queue = 'free'$$,
                  $$VALUES (0::numeric, 1::numeric)$$, 'no quota: everything is borrowed');

SELECT results_eq($$SELECT node, tide.get(allocated, 'gpu'), tide.get(free, 'gpu'), tide.gpu_count(free_gpus), tide.gpu_count(used_gpus), allocations
                      FROM tide.node_usage ORDER BY node$$,
                  $$VALUES ('n1', 7::numeric, 1::numeric, 1, 7, 3::bigint), ('n2', 5::numeric, 3::numeric, 3, 5, 3::bigint),
                           ('n3', 0::numeric, 0::numeric, 0, 0, 0::bigint)$$,
                  'node usage: allocated, free, free and used GPUs');
SELECT is((SELECT tide.get(free, 'cpu') FROM tide.node_usage WHERE node = 'n3'), 16::numeric, 'an idle node is all free');
-- Releasing frees nothing until released.
SELECT tide.cancel(:b);
SELECT is((SELECT tide.get(allocated, 'gpu') FROM tide.node_usage WHERE node = 'n1'), 7::numeric, 'a releasing allocation still holds its resources');
SELECT tide.evicted((pg_temp.allocs(:b))[1]);
SELECT is((SELECT tide.get(allocated, 'gpu') FROM tide.node_usage WHERE node = 'n1'), 5::numeric, 'a released one does not');
SELECT is((SELECT evicting FROM tide.queue_usage WHERE queue = 'q1'), 0::bigint, 'and the job is no longer evicting');

-- Submitters see their own pending jobs only; the usage views are not theirs.
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id = :p1;
SET LOCAL ROLE tap_alice;
SELECT results_eq('SELECT job_id, position FROM tide.pending', format('VALUES (%s::bigint, 4::bigint)', :p1),
                  'a submitter sees its own pending jobs, placed among everyone''s');
SELECT throws_ok('SELECT * FROM tide.queue_usage', '42501', NULL, 'queue_usage is for admins and readers');
RESET ROLE;
SET LOCAL ROLE tap_reader;
SELECT cmp_ok((SELECT count(*) FROM tide.pending), '>', 5::bigint, 'a reader sees every pending job');
SELECT is((SELECT count(*) FROM tide.node_usage), 3::bigint, 'a reader sees every node');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
