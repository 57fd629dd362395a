-- What a new user hit, each answered: estimate_start of a NULL or missing
-- job as explain answers, largest_free_gpus within the node selector, a
-- reversed window refused by wait_stats, short borrowing in the accounting,
-- a bucket cut short (by until or by now) averaged over what it covers, a
-- submission counter that counts jobs, not identity values.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(40);

-- ---------------------------------------------------------------- estimate_start
SELECT is(pg_temp.err('SELECT tide.estimate_start(NULL)'), pg_temp.err('SELECT tide.explain(NULL)'),
          'estimate_start(NULL) answers as explain(NULL)');
SELECT is(pg_temp.err('SELECT tide.explain(NULL)'),
          '22004 | job_id must not be NULL | Give the id of a job, as tide.submit returned it.',
          'a NULL job id is refused, naming the argument');
SELECT is(pg_temp.err('SELECT tide.estimate_start(987654321)'), pg_temp.err('SELECT tide.explain(987654321)'),
          'estimate_start of a missing job answers as explain');
SELECT alike(pg_temp.err('SELECT tide.estimate_start(987654321)'), 'P0002 | job 987654321 does not exist | %',
            'a missing job does not exist');
-- an archived job: explain answers from the archive, estimate_start its start
SELECT tide.submit('q1', 'gpu=1') AS old \gset
SET LOCAL session_replication_role = replica;
UPDATE tide.jobs SET state = 'succeeded', started_at = now() - interval '3 days', finished_at = now() - interval '2 days'
 WHERE id = :old;
INSERT INTO tide.jobs_archive SELECT j.*, now() FROM tide.jobs j WHERE j.id = :old;
DELETE FROM tide.jobs WHERE id = :old;
SET LOCAL session_replication_role = DEFAULT;
SELECT is(tide.explain(:old) ->> 'archived', 'true', 'explain answers an archived job');
SELECT is(tide.estimate_start(:old), now() - interval '3 days',
          'estimate_start answers its start');

-- ---------------------------------------------------------------- largest_free_gpus
-- n1 (zone a) has 2 GPUs free, n2 (zone b) all 8: a job for zone a sees 2.
UPDATE tide.nodes SET labels = '{"zone": "a"}' WHERE name = 'n1';
UPDATE tide.nodes SET labels = '{"zone": "b"}' WHERE name = 'n2';
SELECT tide.submit('qi', 'gpu=6') AS six \gset
SELECT pg_temp.place(:six, ARRAY['n1']);
SELECT tide.submit('qi', 'gpu=4', node_selector => '{"zone": "a"}') AS zoned \gset
SELECT is((SELECT (b ->> 'largest_free_gpus')::int FROM jsonb_array_elements(tide.explain(:zoned) -> 'blocking') b
            WHERE b ->> 'rule' = 'R-L4'),
          2, 'largest_free_gpus counts only the nodes the selector allows');
SELECT tide.submit('qi', 'gpu=9') AS nine \gset
SELECT is((SELECT (b ->> 'largest_free_gpus')::int FROM jsonb_array_elements(tide.explain(:nine) -> 'blocking') b
            WHERE b ->> 'rule' = 'R-L4'),
          8, 'without a selector every ready node of the group counts');

-- ---------------------------------------------------------------- wait_stats
SELECT alike(pg_temp.err($$SELECT * FROM tide.wait_stats(now(), now() - interval '1 day')$$),
            '22023 | the window [%, %) is empty: since is later than until | Pass since < until (swap the two).',
            'wait_stats refuses a reversed window');
SELECT alike(pg_temp.err($$SELECT * FROM tide.gpu_usage(now(), now() - interval '1 day')$$),
            '22023 | the window [%, %) is empty: since is later than until | Pass since < until (swap the two).',
            'and gpu_usage says the same');
SELECT alike(pg_temp.err($$SELECT * FROM tide.wait_stats(now(), NULL)$$),
            '22004 | until must not be NULL | %', 'a NULL end is named');
SELECT is(pg_temp.err($$SELECT * FROM tide.wait_stats(now() - interval '1 hour', now())$$), 'no error',
          'a window in order is answered');

-- ---------------------------------------------------------------- buckets cut short
-- 8 GPUs of q1 held on n1 (of the 16 GPUs of n1 and n2) from 20 minutes
-- before B (two hours ago, on the hour) on: B cut at 5 minutes by until is
-- 8 of 16 GPUs, not half of each.
SELECT pg_catalog.date_bin('1 hour', now() - interval '2 hours', '2000-01-01 00:00:00+00') AS b \gset
SET LOCAL session_replication_role = replica;
UPDATE tide.node_capacity_history SET valid_from = now() - interval '3 days';
INSERT INTO tide.jobs (id, queue, owner, created_at, service_type, state, started_at) VALUES
    (803, 'q1', 'tap_alice', :'b'::timestamptz - interval '20 minutes', 'training', 'running', :'b'::timestamptz - interval '20 minutes');
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (803, 'main', 1, 'gpu=8');
INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, state, created_at, started_at) VALUES
    (803, 'main', 0, 'n1', 'gpu=8', '0-7', 'running', :'b'::timestamptz - interval '20 minutes', :'b'::timestamptz - interval '20 minutes');
SET LOCAL session_replication_role = DEFAULT;
SELECT is((SELECT array[gpus_used, gpus_total] FROM tide.gpu_usage(:'b'::timestamptz - interval '10 minutes', :'b'::timestamptz + interval '5 minutes')
            WHERE bucket_start = :'b' AND queue = 'q1' AND owner IS NULL),
          '{8.000,16.000}'::numeric[], 'a bucket cut by until: the mean over what it covers');
SELECT is((SELECT array[gpus_used, gpus_total] FROM tide.gpu_usage(:'b'::timestamptz - interval '10 minutes', :'b'::timestamptz + interval '5 minutes', '1 hour')
            WHERE bucket_start = pg_catalog.date_bin('1 hour', :'b'::timestamptz, '2000-01-01 00:00:00+00') AND queue = 'q1' AND owner IS NULL),
          '{8.000,16.000}'::numeric[], 'an hour cut by until too');
SELECT is((SELECT array[gpus_used, gpus_total] FROM tide.gpu_usage(now() - interval '30 minutes', now())
            WHERE bucket_start = pg_catalog.date_bin('10 minutes', now(), '2000-01-01 00:00:00+00') AND queue = 'q1' AND owner IS NULL),
          '{8.000,16.000}'::numeric[], 'the bucket in progress: the mean until now');
SELECT tide._rollup_buckets();
SELECT is((SELECT array[gpus_used, gpus_total] FROM tide.gpu_usage(:'b'::timestamptz - interval '10 minutes', :'b'::timestamptz + interval '5 minutes')
            WHERE bucket_start = :'b' AND queue = 'q1' AND owner IS NULL),
          '{8.000,16.000}'::numeric[], 'the same once the buckets are rolled up');

-- ---------------------------------------------------------------- short borrowing
-- Day D (UTC, two days ago) 10:00 to 10:05: q1 (quota gpu=8) holds 16 GPUs,
-- 8 each of alice and bob, and nothing else that bucket.
CREATE FUNCTION pg_temp.t(hhmm text) RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT ((now() AT TIME ZONE 'UTC')::date - 2 + hhmm::time) AT TIME ZONE 'UTC' $$;
SET LOCAL session_replication_role = replica;
INSERT INTO tide.jobs (id, queue, owner, created_at, service_type, state, started_at, finished_at) VALUES
    (801, 'q1', 'tap_alice', pg_temp.t('10:00'), 'training', 'succeeded', pg_temp.t('10:00'), pg_temp.t('10:05')),
    (802, 'q1', 'tap_bob', pg_temp.t('10:00'), 'training', 'succeeded', pg_temp.t('10:00'), pg_temp.t('10:05'));
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (801, 'main', 1, 'gpu=8'), (802, 'main', 1, 'gpu=8');
INSERT INTO tide.allocations (job_id, role, replica, node, resources, gpus, state, created_at, started_at, released_at, release_reason, exit_code) VALUES
    (801, 'main', 0, 'n1', 'gpu=8', '0-7', 'released', pg_temp.t('10:00'), pg_temp.t('10:00'), pg_temp.t('10:05'), 'exited', 0),
    (802, 'main', 0, 'n2', 'gpu=8', '0-7', 'released', pg_temp.t('10:00'), pg_temp.t('10:00'), pg_temp.t('10:05'), 'exited', 0);
SET LOCAL session_replication_role = DEFAULT;
-- (the rollup above was made before these rows)
DELETE FROM tide.usage_buckets;
DELETE FROM tide.rollup_marks;
SELECT tide._rollup_days();
SELECT is((SELECT borrowed_gpu_hours FROM tide.queue_accounting
            WHERE day = (now() AT TIME ZONE 'UTC')::date - 2 AND queue = 'q1' AND owner IS NULL),
          0.667, 'five minutes of 8 GPUs above quota are borrowed GPU-hours');
SELECT is((SELECT array_agg(borrowed_gpu_hours ORDER BY owner) FROM tide.queue_accounting
            WHERE day = (now() AT TIME ZONE 'UTC')::date - 2 AND queue = 'q1' AND owner IS NOT NULL),
          '{0.333,0.333}'::numeric[], 'shared among the owners by what they held');
SELECT is((SELECT gpu_hours FROM tide.queue_accounting
            WHERE day = (now() AT TIME ZONE 'UTC')::date - 2 AND queue = 'q1' AND owner IS NULL),
          1.333, 'and the GPU-hours used');

-- ---------------------------------------------------------------- jobs submitted
SELECT value AS before FROM tide.metrics WHERE name = 'tide_jobs_submitted_total' \gset
SELECT pg_temp.err($$INSERT INTO tide.jobs (queue, service_type) VALUES ('nope', 'training')$$);
SELECT pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => 0)$$);
SELECT tide.submit('q1', 'gpu=1', key => 'k1') AS keyed \gset
SELECT tide.submit('q1', 'gpu=1', key => 'k1');
SELECT is((SELECT value FROM tide.metrics WHERE name = 'tide_jobs_submitted_total'), :before + 1::double precision,
          'tide_jobs_submitted_total counts the job made, not refused inserts nor a key seen before');
DELETE FROM tide.jobs WHERE id = :keyed;
SELECT is((SELECT value FROM tide.metrics WHERE name = 'tide_jobs_submitted_total'), :before + 1::double precision,
          'a deleted job still counts');
SELECT tide.submit_many('q1', ARRAY['gpu=1', 'gpu=2']::tide.resvec[]);
SELECT is((SELECT value FROM tide.metrics WHERE name = 'tide_jobs_submitted_total'), :before + 3::double precision,
          'a batch counts each job');

-- ---------------------------------------------------------------- NULL means the default
-- One rule for tide.submit, submit_array, submit_many and an INSERT: an
-- argument or submission column that has a default takes it when given NULL.
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => NULL) > 0$$), 'no error',
          'tide.submit: replicas => NULL is one replica');
SELECT tide.submit('q1', 'gpu=1', replicas => NULL, priority => NULL, idle => NULL, reserve => NULL, preemptable => NULL,
                   node_selector => NULL, max_retries => NULL, on_evict => NULL, role => NULL, hold => NULL,
                   env => NULL, labels => NULL) AS nulls \gset
SELECT tide.submit('q1', 'gpu=1') AS plain \gset
CREATE FUNCTION pg_temp.settings(job bigint) RETURNS jsonb
    LANGUAGE sql AS $$
SELECT to_jsonb(j) - '{id,created_at,state_reason,pending_reason}'::text[]
       || jsonb_build_object('tasks', (SELECT jsonb_agg(to_jsonb(t) - 'job_id') FROM tide.job_tasks t WHERE t.job_id = job))
  FROM tide.jobs j WHERE j.id = job $$;
SELECT is(pg_temp.settings(:nulls), pg_temp.settings(:plain), 'tide.submit: every NULL is the default');
SELECT is(pg_temp.err($$SELECT tide.submit_many('q1', ARRAY['gpu=1']::tide.resvec[], replicas => NULL, priority => NULL)$$),
          'no error', 'tide.submit_many: replicas => NULL too');
SELECT tide.submit_array('q1', 'gpu=1', 1, replicas => NULL, priority => NULL, on_evict => NULL) AS arr \gset
SELECT is((SELECT replicas FROM tide.job_tasks t JOIN tide.jobs j ON j.id = t.job_id WHERE j.array_id = :arr), 1,
          'tide.submit_array: replicas => NULL too');
-- an INSERT: the same columns NULL take their defaults, a task's role and replicas too
WITH j AS (
    INSERT INTO tide.jobs (queue, priority, idle, reserve, preemptable, node_selector, max_retries, on_evict, held, env, labels)
    VALUES ('q1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) RETURNING id)
SELECT id AS ins FROM j \gset
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (:ins, NULL, NULL, 'gpu=1');
SELECT is(pg_temp.settings(:ins), pg_temp.settings(:plain), 'INSERT: every NULL is the default');
WITH j AS (INSERT INTO tide.jobs (queue) VALUES ('q1') RETURNING id)
SELECT id AS dflt FROM j \gset
INSERT INTO tide.job_tasks (job_id, request) VALUES (:dflt, 'gpu=1');
SELECT is(pg_temp.settings(:dflt), pg_temp.settings(:plain), 'and the same as leaving them out');
-- arguments without a default still refuse NULL, by name
SELECT is(pg_temp.err($$SELECT tide.submit('q1', NULL)$$),
          '22004 | request must not be NULL | Give the per-replica resources, e.g. ''cpu=4, memory=16Gi, gpu=1''.',
          'request => NULL is refused');
SELECT is(pg_temp.err($$SELECT tide.submit_array('q1', 'gpu=1', NULL)$$),
          '22023 | size must be at least 1, not NULL', 'size => NULL is refused');

-- ---------------------------------------------------------------- long names, long values
-- A job's name has 1 to 255 characters, like every other name.
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', name => repeat('n', 10000))$$),
          '54000 | job name is 10000 characters long, the limit is 255 | A name has 1 to 255 characters.',
          'a 10,000-character job name is refused');
SELECT is(pg_temp.err($$INSERT INTO tide.jobs (queue, name) VALUES ('q1', repeat('n', 256))$$),
          '54000 | job name is 256 characters long, the limit is 255 | A name has 1 to 255 characters.',
          'by an INSERT too');
SELECT is(pg_temp.err($$SELECT tide.submit_many('q1', ARRAY['gpu=1']::tide.resvec[], names => ARRAY[''])$$),
          '23514 | job name must not be empty | A name has 1 to 255 characters.',
          'and an empty one by tide.submit_many');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', name => repeat('n', 255)) > 0$$), 'no error',
          '255 characters are a name');
-- A value echoed in a message is cut to 60 characters.
SELECT is(pg_temp.err($$SELECT tide.submit(repeat('q', 10000), 'gpu=1')$$),
          '23503 | queue "' || repeat('q', 57) || '..." does not exist | Submit to one of the queues in tide.queues; an administrator creates queues.',
          'a 10 KB queue name is cut in the error');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', on_evict => repeat('x', 10000))$$),
          '23514 | invalid on_evict "' || repeat('x', 57) || '..." for a job | Use requeue (back to pending when evicted) or fail.',
          'so is a 10 KB on_evict');
SELECT is(pg_temp.err($$SELECT tide.drain_node(repeat('é', 10000))$$),
          '42704 | node "' || repeat('é', 57) || '..." does not exist',
          'a 10 KB node name too, cut by characters');
SELECT ok(length(pg_temp.err($$SELECT ('cpu=1, ' || repeat('x', 10000))::tide.resvec$$)) < 400,
          'a 10 KB resvec text is cut in its syntax error');
SELECT ok(length(pg_temp.err($$SELECT repeat('1,', 5000)::tide.gpumask$$)) < 400,
          'and a 10 KB gpumask text');
SELECT is(tide._cut('é' || repeat('e', 100)), 'é' || repeat('e', 56) || '...', 'tide._cut: 60 characters, whole characters');

SELECT * FROM finish();
ROLLBACK;
