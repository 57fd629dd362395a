-- tide.submit, multi-role jobs by INSERT, and the checks at insert.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(82);

-- Good submissions.
SELECT tide.submit('q1', 'cpu=4, gpu=2', replicas => 3, priority => 7, name => 'train', idle => true,
                   reserve => true, preemptable => false, min_available => 2, gpu_type => 'H100',
                   node_selector => '{"zone": "a"}', time_limit => '1 hour', max_retries => 2,
                   on_evict => 'fail', command => 'python train.py', role => 'worker') AS j \gset
SELECT results_eq(format($$SELECT name, queue, owner = current_user, priority, idle, reserve, preemptable, min_available, gpu_type,
                                  node_selector, time_limit, max_retries, on_evict, command, state, service_type,
                                  attempt, retry_of, avoid_nodes, unschedulable, cancel_requested, state_reason
                             FROM tide.jobs WHERE id = %s$$, :j),
                  $$VALUES ('train', 'q1', true, 7, true, true, false, 2, 'H100', '{"zone": "a"}'::jsonb,
                            '1 hour'::interval, 2, 'fail', 'python train.py', 'pending', 'training', 1, NULL::bigint,
                            '{}'::text[], false, false, 'submitted')$$,
                  'submit stores every argument');
SELECT results_eq(format($$SELECT role, replicas, tide.get(request, 'gpu') FROM tide.job_tasks WHERE job_id = %s$$, :j),
                  $$VALUES ('worker', 3, 2::numeric)$$, 'submit makes one task role');
SELECT tide.submit('q1', 'gpu=1') AS d \gset
SELECT results_eq(format($$SELECT priority, idle, reserve, preemptable, min_available, node_selector, max_retries, on_evict, service_type, owner = current_user
                             FROM tide.jobs WHERE id = %s$$, :d),
                  $$VALUES (0, false, false, true, NULL::int, '{}'::jsonb, 0, 'requeue', 'training', true)$$,
                  'submit defaults');
SELECT is((SELECT role || ':' || replicas FROM tide.job_tasks WHERE job_id = :d), 'main:1', 'default role main, one replica');
SELECT tide.submit('qi', 'gpu=1') AS i1, tide.submit('qi', 'gpu=1', service_type => 'training') AS i2 \gset
SELECT is((SELECT service_type FROM tide.jobs WHERE id = :i1), 'inference', 'service_type defaults to the queue''s');
SELECT is((SELECT service_type FROM tide.jobs WHERE id = :i2), 'training', 'an explicit service_type wins');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=0.5')$$, 'gpu=0.5 is a share of one GPU');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=250m')$$, 'gpu=250m is a share of one GPU');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=8')$$, 'whole GPUs');
SELECT lives_ok($$SELECT tide.submit('q1', 'cpu=1')$$, 'no GPU');
SELECT cmp_ok(tide.submit('q1', 'gpu=1'), '>', :d::bigint, 'ids grow');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = :j AND old_state IS NULL AND new_state = 'pending'), 1,
          'a submission is logged');

-- Bad arguments: clear errors.
SELECT throws_ok($$SELECT tide.submit('nope', 'gpu=1')$$, '23503', 'queue "nope" does not exist', 'unknown queue');
SELECT throws_ok($$SELECT tide.submit(NULL, 'gpu=1')$$, '22004', 'queue must not be NULL', 'NULL queue');
SELECT throws_ok($$SELECT tide.submit('q1', NULL)$$, '22004', 'request must not be NULL', 'NULL request');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', replicas => 0)$$, '22023', 'replicas must be at least 1, not 0', 'zero replicas');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', replicas => -2)$$, '22023', 'replicas must be at least 1, not -2', 'negative replicas');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=1', replicas => NULL)$$, 'NULL replicas: the default, one');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', replicas => 2, min_available => 3)$$, '22023', 'min_available 3 is above the 2 replicas', 'min_available above replicas');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', min_available => 0)$$, '23514', 'min_available must be at least 1, not 0', 'zero min_available');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1.5')$$, '23514', NULL, 'gpu=1.5 is refused');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=2500m')$$, '23514', NULL, 'gpu=2500m is refused');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', service_type => 'batch')$$, '23514', 'invalid service_type "batch" for a job', 'bad service_type');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', on_evict => 'ignore')$$, '23514', 'invalid on_evict "ignore" for a job', 'bad on_evict');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', max_retries => -1)$$, '23514', 'max_retries must not be negative, not -1', 'negative max_retries');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', time_limit => '0')$$, '23514', 'time_limit must be positive, not 00:00:00', 'zero time_limit');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', node_selector => '[1]')$$, '23514', NULL, 'node_selector must be an object');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', gpu_type => '')$$, '23514', NULL, 'empty gpu_type');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', role => '')$$, '23514', NULL, 'empty role');

-- Multi-role jobs: tide.jobs + tide.job_tasks in one transaction.  The
-- deferred checks are forced with SET CONSTRAINTS ALL IMMEDIATE inside a DO
-- block, which throws_ok and lives_ok run in a subtransaction.
INSERT INTO tide.jobs (queue, name, min_available) VALUES ('q1', 'ps-worker', 3) RETURNING id AS m \gset
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (:m, 'ps', 1, 'cpu=4'), (:m, 'worker', 4, 'gpu=1');
SELECT lives_ok($$SET CONSTRAINTS ALL IMMEDIATE$$, 'a job inserted with its tasks passes the deferred checks');
SET CONSTRAINTS ALL DEFERRED;
SELECT is((SELECT sum(replicas)::int FROM tide.job_tasks WHERE job_id = :m), 5, 'two roles, five replicas');

SELECT throws_ok($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (-7, 'main', 1, 'gpu=1')$$,
                 '23503', NULL, 'a task needs its job (foreign key)');
SELECT throws_ok($o$DO $d$ BEGIN
                       INSERT INTO tide.jobs (id, queue) VALUES (-1, 'q1');
                       SET CONSTRAINTS ALL IMMEDIATE;
                   END $d$$o$, '23514', 'job -1 has no tasks', 'a job without tasks is refused');
SELECT throws_ok($o$DO $d$ BEGIN
                       INSERT INTO tide.jobs (id, queue, min_available) VALUES (-2, 'q1', 6);
                       INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (-2, 'ps', 1, 'cpu=4'), (-2, 'worker', 4, 'gpu=1');
                       SET CONSTRAINTS ALL IMMEDIATE;
                   END $d$$o$, '23514', 'min_available 6 of job -2 is above its 5 replicas',
                 'min_available above the replicas of all roles');
INSERT INTO tide.jobs (queue) VALUES ('q1') RETURNING id AS e \gset
SELECT throws_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'w', 0, 'gpu=1')$$, :e),
                 '23514', format('task "w" of job %s has 0 replicas', :e), 'a role with zero replicas');
SELECT throws_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'w', 2, 'gpu=1.5')$$, :e),
                 '23514', format('GPU request 1.5 of task "w" of job %s is not a whole number', :e), 'a role asking 1.5 GPUs');
SELECT lives_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'w', 2, 'gpu=0.5')$$, :e),
                'a role asking half a GPU per replica');

SELECT throws_ok($$INSERT INTO tide.jobs (queue) VALUES ('nope')$$, '23503', 'queue "nope" does not exist', 'unknown queue by INSERT');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, service_type) VALUES ('q1', 'web')$$, '23514', 'invalid service_type "web" for a job', 'bad service_type by INSERT');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, on_evict) VALUES ('q1', 'x')$$, '23514', 'invalid on_evict "x" for a job', 'bad on_evict by INSERT');

-- Tasks are frozen once the job left pending.
SELECT pg_temp.place(:d, ARRAY['n1']);
SELECT throws_ok(format($$UPDATE tide.job_tasks SET replicas = 2 WHERE job_id = %s$$, :d), '55000',
                 format('tasks of job %s cannot change: the job is allocated', :d), 'tasks of a placed job are frozen');
SELECT throws_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'extra', 1, 'cpu=1')$$, :d), '55000',
                 NULL, 'no new task for a placed job');
SELECT lives_ok(format($$UPDATE tide.job_tasks SET replicas = 4 WHERE job_id = %s$$, :j), 'tasks of a pending job may change');
SELECT throws_ok(format($o$DO $d$ BEGIN
                              UPDATE tide.job_tasks SET replicas = 1 WHERE job_id = %s;
                              SET CONSTRAINTS ALL IMMEDIATE;
                          END $d$$o$, :j), '23514', format('min_available 2 of job %s is above its 1 replicas', :j),
                 'but not below its min_available');
-- Limits that keep one job from stopping every cycle: the cycle sizes its
-- arrays by replica counts and converts time limits to microseconds.
SELECT throws_ok($$SELECT tide.submit('q1', 'cpu=1m', replicas => 10001)$$, '23514', NULL,
                 'more than 10000 replicas in a role');
SELECT lives_ok($$SELECT tide.submit('q1', 'cpu=1m', replicas => 10000)$$, '10000 replicas are fine');
SELECT throws_ok($do$DO $x$
                   DECLARE j bigint;
                   BEGIN
                     INSERT INTO tide.jobs (queue) VALUES ('q1') RETURNING id INTO j;
                     INSERT INTO tide.job_tasks (job_id, role, replicas, request)
                     VALUES (j, 'a', 10000, 'cpu=1m'), (j, 'b', 10000, 'cpu=1m');
                     SET CONSTRAINTS ALL IMMEDIATE;
                   END $x$$do$, '54000', NULL, 'more than 10000 replicas across the roles of one job');
-- a new task is checked at its insert (it can only add replicas): no
-- deferred check of its own
SELECT tide.submit('q1', 'cpu=1m', replicas => 6000, role => 'a') AS big \gset
SELECT throws_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'b', 5000, 'cpu=1m')$$, :big),
                 '54000', format('job %s has 11000 replicas, more than 10000', :big),
                 'a task that takes its job above 10000 replicas is refused at its insert');
SELECT lives_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'b', 4000, 'cpu=1m')$$, :big),
                'a task that brings its job to 10000 replicas is fine');
SELECT lives_ok($$SET CONSTRAINTS ALL IMMEDIATE$$, 'and so is the job at commit');
SET CONSTRAINTS ALL DEFERRED;
SELECT is((SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger
            WHERE tgrelid = 'tide.job_tasks'::regclass AND tgdeferrable AND (tgtype & 4) <> 0),
          NULL, 'no deferred trigger fires on a task insert');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', time_limit => '300000 years')$$, '23514', NULL,
                 'a time_limit beyond 100 years');
SELECT throws_ok($$SELECT tide.register_node('topo', 'gpu=2', gpu_topology => '{0,40000}')$$, '23514', NULL,
                 'a topology domain id above 32767');
SELECT throws_ok($$INSERT INTO tide.queues (name, min_runtime) VALUES ('forever', '1000 years')$$, '23514', NULL,
                 'a queue min_runtime beyond 100 years');

-- (checked before the job is inserted: the message names no job id that
-- the rollback would remove)
SELECT throws_ok($$SELECT tide.submit('q1', '')$$, '23514', 'task "main" requests no resources',
                 'an empty request is refused');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=0')$$, '23514', NULL, 'so is one of zeros (they vanish)');

-- A queue may cap the priority submitters choose (it decides whom a job
-- may preempt within the queue, R-E3); administrators may go above.
UPDATE tide.queues SET max_priority = 100 WHERE name = 'q1';
SET LOCAL ROLE tap_alice;
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=1', priority => 100)$$, 'a submitter at the cap');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', priority => 2147483647)$$, '42501',
                 'priority 2147483647 is above the max_priority 100 of queue "q1"', 'above it: refused');
RESET ROLE;
SET LOCAL ROLE tap_admin;
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=1', priority => 1000)$$, 'an administrator may go above');
RESET ROLE;
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE queue = 'q1' AND priority > 100 AND owner = 'tap_alice'), 0,
          'nothing of the refused submission stayed');

-- Who may use a queue, and what its submitters may choose: by default
-- anyone and anything; an administrator closes what the queue needs.
CREATE ROLE tap_team;
GRANT tap_team TO tap_bob;
INSERT INTO tide.queues (name, submit_role, preemptable_only, fixed_service_type)
VALUES ('team', 'tap_team', true, true);
SET LOCAL ROLE tap_alice;
SELECT throws_ok($$SELECT tide.submit('team', 'gpu=1')$$, '42501',
                 'role "tap_alice" may not submit to queue "team"', 'submit_role: a non-member is refused');
RESET ROLE;
SET LOCAL ROLE tap_bob;
SELECT lives_ok($$SELECT tide.submit('team', 'gpu=1')$$, 'a member of the submit_role submits');
SELECT throws_ok($$SELECT tide.submit('team', 'gpu=1', preemptable => false)$$, '42501',
                 'queue "team" takes only preemptable jobs', 'preemptable_only: a non-preemptable job is refused');
SELECT throws_ok($$SELECT tide.submit('team', 'gpu=1', service_type => 'inference')$$, '42501',
                 'queue "team" takes only training jobs, not inference', 'fixed_service_type: another service type is refused');
SELECT lives_ok($$SELECT tide.submit('team', 'gpu=1', service_type => 'training')$$, 'the queue''s own type is fine');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, preemptable) VALUES ('team', false)$$, '42501',
                 'queue "team" takes only preemptable jobs', 'an INSERT meets the same checks');
RESET ROLE;
SET LOCAL ROLE tap_admin;
SELECT lives_ok($$SELECT tide.submit('team', 'gpu=1', preemptable => false, service_type => 'inference')$$,
                'an administrator may do all of it');
RESET ROLE;
SELECT is((SELECT array_agg(owner || ':' || preemptable || ':' || service_type ORDER BY id) FROM tide.jobs WHERE queue = 'team'),
          ARRAY['tap_bob:true:training', 'tap_bob:true:training', 'tap_admin:false:inference'],
          'exactly the allowed jobs were made');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=1', preemptable => false, service_type => 'inference')$$,
                'a queue without these settings lets submitters choose (default)');
-- a retry keeps what its original was allowed, even after the queue closed
UPDATE tide.queues SET submit_role = 'tap_admin' WHERE name = 'team';
SELECT id AS bobs FROM tide.jobs WHERE queue = 'team' AND owner = 'tap_bob' ORDER BY id LIMIT 1 \gset
UPDATE tide.jobs SET max_retries = 1 WHERE id = :bobs;
SELECT pg_temp.place(:bobs, ARRAY['n1']);
SELECT tide.exited(a.id, 1) FROM tide.allocations a WHERE a.job_id = :bobs;
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :bobs), 1, 'a retry is made for a member who lost access');
SELECT throws_ok($$INSERT INTO tide.queues (name, submit_role) VALUES ('blank', '')$$, '23514', NULL,
                 'an empty submit_role is refused (NULL means anyone)');
SELECT throws_ok(format($$INSERT INTO tide.jobs (queue, owner) VALUES ('team', 'nobody_%s')$$, pg_backend_pid()), '42501', NULL,
                 'an owner that is no role may not use a closed queue');

-- The helpers every insert trigger inlines (tide._restoring(),
-- tide._current_cycle()) have no SET clause: a text "=" placed before
-- pg_catalog's on the path must not change them.
CREATE SCHEMA tap_evil;
CREATE FUNCTION tap_evil.eq(text, text) RETURNS boolean LANGUAGE plpgsql AS
    $$ BEGIN RAISE EXCEPTION 'trojan ran'; END $$;
CREATE OPERATOR tap_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_evil.eq);
SET LOCAL search_path = tap_evil, pg_catalog, public;
SELECT tide._restoring() AS evil_restoring, tide._current_cycle() IS NULL AS evil_no_cycle \gset
SELECT set_config('tide.cycle_id', '42', true) AS ignored \gset
SELECT tide._current_cycle() AS evil_cycle \gset
SELECT set_config('tide.cycle_id', '', true) AS ignored \gset
RESET search_path;
SELECT is(:'evil_restoring'::text, 'f', 'tide._restoring() under a trojan "=" on the path: not restoring, the trojan never ran');
SELECT is(:'evil_no_cycle'::text, 't', 'tide._current_cycle() under a trojan "=": NULL outside a cycle');
SELECT is(:'evil_cycle'::text, '42', 'tide._current_cycle() under a trojan "=": the cycle id set');

-- A job's queue exists (no foreign key: 27_queue_checks.sql).
INSERT INTO tide.queues (name) VALUES ('moving');
SELECT tide.submit('moving', 'cpu=1') AS mover \gset
SELECT throws_ok($$DELETE FROM tide.queues WHERE name = 'moving'$$, '23503', 'queue "moving" has jobs',
                 'a queue that has jobs is not deleted');
SELECT throws_ok($$TRUNCATE tide.queues$$, '23503', NULL, 'nor truncated');
SELECT throws_ok(format($$UPDATE tide.jobs SET queue = 'nope' WHERE id = %s$$, :mover), '23503', 'queue "nope" does not exist',
                 'a job is not moved to a queue that does not exist');
UPDATE tide.queues SET name = 'moved' WHERE name = 'moving';
SELECT is((SELECT queue FROM tide.jobs WHERE id = :mover), 'moved', 'a renamed queue takes its jobs along');
DELETE FROM tide.jobs WHERE id = :mover;
SELECT lives_ok($$DELETE FROM tide.queues WHERE name = 'moved'$$, 'a queue without jobs is deleted');
SELECT is((SELECT count(*)::int FROM pg_constraint WHERE conrelid = 'tide.jobs'::regclass AND contype = 'f'), 0,
          'tide.jobs has no foreign key (its check would lock the queue row on every submission)');
SELECT is((SELECT count(*)::int FROM tide.jobs j WHERE NOT EXISTS (SELECT 1 FROM tide.queues q WHERE q.name = j.queue)), 0,
          'no job without its queue');

SELECT * FROM finish();
ROLLBACK;
