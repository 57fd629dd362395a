-- tide.submit_many: many one-role jobs in one call.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(19);

SELECT tide.submit_many('q1', ARRAY['gpu=1', 'cpu=2', 'gpu=0.5']::tide.resvec[],
                        commands => ARRAY['echo a', NULL, 'echo c'], names => ARRAY['a', 'b', 'c'],
                        priority => 3, max_retries => 1) AS ids \gset
SELECT is(cardinality(:'ids'::bigint[]), 3, 'one id per request');
SELECT results_eq(format($$SELECT name, command, priority, max_retries, state, queue, owner = current_user
                             FROM tide.jobs j JOIN unnest(%L::bigint[]) WITH ORDINALITY u(id, o) ON u.id = j.id
                            ORDER BY u.o$$, :'ids'),
                  $$VALUES ('a', 'echo a', 3, 1, 'pending', 'q1', true), ('b', NULL, 3, 1, 'pending', 'q1', true),
                           ('c', 'echo c', 3, 1, 'pending', 'q1', true)$$,
                  'the ids come back in the order of the requests, each with its command and name');
SELECT results_eq(format($$SELECT t.role, t.replicas, t.request::text
                             FROM tide.job_tasks t JOIN unnest(%L::bigint[]) WITH ORDINALITY u(id, o) ON u.id = t.job_id
                            ORDER BY u.o$$, :'ids'),
                  $$VALUES ('main', 1, 'gpu=1'), ('main', 1, 'cpu=2'), ('main', 1, 'gpu=0.5')$$,
                  'each job has its own request as its main task');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = ANY (:'ids'::bigint[])
             AND old_state IS NULL AND new_state = 'pending'), 3, 'every submission is logged once');
SELECT is((SELECT array_agg(service_type ORDER BY id) FROM tide.jobs WHERE id = ANY (:'ids'::bigint[])),
          '{training,training,training}', 'service_type defaults to the queue''s');
SELECT tide.submit_many('qi', ARRAY['gpu=1']::tide.resvec[]) AS one \gset
SELECT is(:'one'::bigint[], (SELECT ARRAY[max(id)] FROM tide.jobs), 'a single request');
SELECT is((SELECT service_type FROM tide.jobs ORDER BY id DESC LIMIT 1), 'inference', 'an inference queue''s default');
SELECT is(tide.submit_many('q1', '{}'::tide.resvec[]), '{}'::bigint[], 'no requests, no jobs');
SELECT is(tide.submit_many('q1', NULL::tide.resvec[]), '{}'::bigint[], 'NULL requests, no jobs');
SELECT is(cardinality(tide.submit_many('q1', array_fill('cpu=1'::tide.resvec, ARRAY[2000]), replicas => 2)), 2000,
          '2000 jobs in one call');
SELECT is((SELECT count(*)::int FROM tide.job_tasks t JOIN tide.jobs j ON j.id = t.job_id
            WHERE t.replicas = 2 AND t.request OPERATOR(tide.=) 'cpu=1'), 2000, 'with the replicas given');

-- The checks of a submission hold for each job, and a bad element fails the whole call.
SELECT throws_ok($$SELECT tide.submit_many('nope', ARRAY['gpu=1']::tide.resvec[])$$, '23503',
                 'queue "nope" does not exist', 'unknown queue');
SELECT throws_ok($$SELECT tide.submit_many(NULL, ARRAY['gpu=1']::tide.resvec[])$$, '22004',
                 'queue must not be NULL', 'NULL queue');
SELECT throws_ok($$SELECT tide.submit_many('q1', ARRAY['gpu=1', NULL]::tide.resvec[])$$, '22004',
                 'request 2 of requests is NULL', 'a NULL request names its position');
SELECT throws_ok($$SELECT tide.submit_many('q1', ARRAY['gpu=1', '']::tide.resvec[])$$, '23514',
                 NULL, 'an empty request is refused by the task check');
SELECT throws_ok($$SELECT tide.submit_many('q1', ARRAY['gpu=1', 'gpu=1']::tide.resvec[], commands => ARRAY['x'])$$,
                 '22023', 'commands has 1 elements for 2 requests', 'commands of another length');
SELECT throws_ok($$SELECT tide.submit_many('q1', ARRAY['gpu=1']::tide.resvec[], replicas => 0)$$, '22023',
                 'replicas must be at least 1, not 0', 'zero replicas');

-- A submitter's jobs are its own; a role without tide_submitter may not call it.
SET ROLE tap_alice;
SELECT tide.submit_many('q1', ARRAY['gpu=1', 'gpu=2']::tide.resvec[]) AS mine \gset
RESET ROLE;
SELECT is((SELECT count(*)::int FROM tide.jobs j WHERE j.id = ANY (:'mine'::bigint[]) AND j.owner = 'tap_alice'), 2,
          'a submitter submits a batch as itself');
SET ROLE tap_nobody;
SELECT throws_ok($$SELECT tide.submit_many('q1', ARRAY['gpu=1']::tide.resvec[])$$, '42501', NULL,
                 'a role that is no submitter may not call it');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
