-- tide.submit in C (src/submit.c): every error as the plpgsql tide.submit
-- gave it (code, message, hint; the cases below are that function's
-- answers), the triggers it turns aside for its own rows still guarding
-- every other writer, its writer (tide._writer() = 'submit') out of reach of SQL
-- and off again after an error inside it, its event row and its one bump
-- of the change counter.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(57);

INSERT INTO tide.queues (name, submit_role, max_priority, preemptable_only, fixed_service_type)
VALUES ('ql', 'tap_bob', 5, true, true);
-- a role that may call tide.submit but not tide._admit_job, nor insert jobs
CREATE ROLE tap_exec;
GRANT USAGE ON SCHEMA tide TO tap_exec;
GRANT SELECT ON tide.queues TO tap_exec;
GRANT EXECUTE ON FUNCTION tide.submit(text, tide.resvec, integer, integer, text, boolean, boolean, text, boolean,
                                      integer, text, jsonb, interval, integer, text, text, text,
                                      bigint[], boolean, timestamptz, jsonb, text, jsonb, text, interval, interval) TO tap_exec;

-- Every bad argument: the same error as before.
SELECT is(pg_temp.err($$SELECT tide.submit(NULL, 'gpu=1')$$),
          '22004 | queue must not be NULL | Name one of the queues in tide.queues.',
          'tide.submit(NULL, ''gpu=1'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', NULL)$$),
          '22004 | request must not be NULL | Give the per-replica resources, e.g. ''cpu=4, memory=16Gi, gpu=1''.',
          'tide.submit(''q1'', NULL)');
SELECT is(pg_temp.err($$SELECT tide.submit('nope', 'gpu=1')$$),
          '23503 | queue "nope" does not exist | Submit to one of the queues in tide.queues; an administrator creates queues.',
          'tide.submit(''nope'', ''gpu=1'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => 0)$$),
          '22023 | replicas must be at least 1, not 0',
          'tide.submit(''q1'', ''gpu=1'', replicas => 0)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => NULL) > 0$$),
          'no error',
          'tide.submit(''q1'', ''gpu=1'', replicas => NULL)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => 10001)$$),
          '23514 | task "main" has 10001 replicas, more than 10000 | A job has at most 10000 replicas across its task roles; split larger work into several jobs.',
          'tide.submit(''q1'', ''gpu=1'', replicas => 10001)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', replicas => 2, min_available => 3)$$),
          '22023 | min_available 3 is above the 2 replicas | Leave min_available NULL to require every replica.',
          'tide.submit(''q1'', ''gpu=1'', replicas => 2, min_available => 3)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', min_available => 0)$$),
          '23514 | min_available must be at least 1, not 0 | Leave it NULL to require every replica.',
          'tide.submit(''q1'', ''gpu=1'', min_available => 0)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1.5')$$),
          '23514 | GPU request 1.5 of task "main" is not a whole number | A request above one GPU must be whole (gpu=2); below one it may be a share of one GPU (gpu=0.5 or gpu=250m).',
          'tide.submit(''q1'', ''gpu=1.5'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', '')$$),
          '23514 | task "main" requests no resources | Give a per-replica resource vector such as ''cpu=4, memory=16Gi, gpu=1''.',
          'tide.submit(''q1'', '''')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', service_type => 'batch')$$),
          '23514 | invalid service_type "batch" for a job | Use training or inference, or leave it NULL to take the queue''s.',
          'tide.submit(''q1'', ''gpu=1'', service_type => ''batch'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', on_evict => 'ignore')$$),
          '23514 | invalid on_evict "ignore" for a job | Use requeue (back to pending when evicted) or fail.',
          'tide.submit(''q1'', ''gpu=1'', on_evict => ''ignore'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', max_retries => -1)$$),
          '23514 | max_retries must not be negative, not -1',
          'tide.submit(''q1'', ''gpu=1'', max_retries => -1)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', max_retries => 101)$$),
          '23514 | max_retries must be at most 100, not 101 | A job is retried at most 100 times; 0 (the default) means no retry.',
          'tide.submit(''q1'', ''gpu=1'', max_retries => 101)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', time_limit => '0')$$),
          '23514 | time_limit must be positive, not 00:00:00 | Leave it NULL for no limit.',
          'tide.submit(''q1'', ''gpu=1'', time_limit => ''0'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', time_limit => '101 years')$$),
          '23514 | time_limit must be at most 100 years, not 101 years | Leave it NULL for no limit.',
          'tide.submit(''q1'', ''gpu=1'', time_limit => ''101 years'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', node_selector => '[1]')$$),
          '23514 | node_selector must be a JSON object, not array | Give the labels a node must have, e.g. ''{"zone": "a"}''; ''{}'' selects any node.',
          'tide.submit(''q1'', ''gpu=1'', node_selector => ''[1]'')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', node_selector => NULL)$$),
          'no error',
          'tide.submit(''q1'', ''gpu=1'', node_selector => NULL)');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', gpu_type => '')$$),
          '23514 | gpu_type must not be empty | A name has 1 to 255 characters.',
          'tide.submit(''q1'', ''gpu=1'', gpu_type => '''')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', gpu_type => repeat('x', 256))$$),
          '54000 | gpu_type is 256 characters long, the limit is 255 | A name has 1 to 255 characters.',
          'tide.submit(''q1'', ''gpu=1'', gpu_type => repeat(''x'', 256))');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', role => '')$$),
          '23514 | role must not be empty | A name has 1 to 255 characters.',
          'tide.submit(''q1'', ''gpu=1'', role => '''')');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', role => repeat('r', 256))$$),
          '54000 | role is 256 characters long, the limit is 255 | A name has 1 to 255 characters.',
          'tide.submit(''q1'', ''gpu=1'', role => repeat(''r'', 256))');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', on_evict => NULL, max_retries => NULL, priority => NULL, role => NULL) > 0$$),
          'no error',
          'tide.submit(''q1'', ''gpu=1'', on_evict => NULL, max_retries => NULL, priority => NULL, role => NULL)');
SET ROLE tap_alice;
SELECT is(pg_temp.err($$SELECT tide.submit('ql', 'gpu=1')$$),
          '42501 | role "tap_alice" may not submit to queue "ql" | Queue ql takes jobs of members of role tap_bob (tide.queues.submit_role).',
          'tide.submit(''ql'', ''gpu=1'') as tap_alice');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', name => 'mine') > 0$$),
          'no error',
          'tide.submit(''q1'', ''gpu=1'', name => ''mine'') as tap_alice');
RESET ROLE;
SET ROLE tap_bob;
SELECT is(pg_temp.err($$SELECT tide.submit('ql', 'gpu=1', priority => 6)$$),
          '42501 | priority 6 is above the max_priority 5 of queue "ql" | Submit at or below the queue''s max_priority, or ask an administrator to raise it.',
          'tide.submit(''ql'', ''gpu=1'', priority => 6) as tap_bob');
SELECT is(pg_temp.err($$SELECT tide.submit('ql', 'gpu=1', preemptable => false)$$),
          '42501 | queue "ql" takes only preemptable jobs | Leave preemptable at true (tide.queues.preemptable_only), or ask an administrator.',
          'tide.submit(''ql'', ''gpu=1'', preemptable => false) as tap_bob');
SELECT is(pg_temp.err($$SELECT tide.submit('ql', 'gpu=1', service_type => 'inference')$$),
          '42501 | queue "ql" takes only training jobs, not inference | Leave service_type NULL to take the queue''s (tide.queues.fixed_service_type), or use a queue of that type.',
          'tide.submit(''ql'', ''gpu=1'', service_type => ''inference'') as tap_bob');
SELECT is(pg_temp.err($$SELECT tide.submit('ql', 'gpu=1') > 0$$),
          'no error',
          'tide.submit(''ql'', ''gpu=1'') as tap_bob');
RESET ROLE;
SET ROLE tap_nobody;
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1')$$),
          '42501 | permission denied for schema tide',
          'tide.submit(''q1'', ''gpu=1'') as tap_nobody');
RESET ROLE;
SET ROLE tap_exec;
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1')$$),
          '42501 | permission denied for function _admit_job',
          'tide.submit(''q1'', ''gpu=1'') as tap_exec');
RESET ROLE;

-- What was written: the same rows as the triggers made.
SELECT results_eq($$SELECT j.owner, j.service_type, j.state, j.state_reason, j.cancel_requested, j.evict_goal,
                           e.old_state, e.new_state, e.reason, e.cycle_id
                      FROM tide.jobs j JOIN tide.job_events e ON e.job_id = j.id
                     WHERE j.name = 'mine'$$,
                  $$VALUES ('tap_alice'::text, 'training'::text, 'pending'::text, 'submitted'::text, false, NULL::text,
                            NULL::text, 'pending'::text, 'submitted'::text, NULL::bigint)$$,
                  'a submitted job: its owner, its queue''s service_type, pending, and one event row');
SET ROLE tap_alice;
SELECT is((SELECT count(*)::int FROM tide.job_events e JOIN tide.jobs j ON j.id = e.job_id WHERE j.name = 'mine'), 1,
          'the submitter sees its event row');
RESET ROLE;
SELECT set_config('tide.cycle_id', '77', true);
SELECT tide.submit('q1', 'gpu=1', name => 'in cycle') AS c \gset
SELECT set_config('tide.cycle_id', '', true);
SELECT is((SELECT cycle_id FROM tide.job_events WHERE job_id = :c), 77::bigint,
          'the event row names the cycle making the change (tide.cycle_id), as the trigger did');

-- The change counter: one bump for a submission, one per table for the
-- same rows by hand.
SELECT last_value AS v0 FROM tide.change_seq \gset
SELECT tide.submit('q1', 'gpu=1') AS s \gset
SELECT last_value AS v1 FROM tide.change_seq \gset
SELECT is(:v1::bigint - :v0::bigint, 1::bigint, 'a submission bumps tide.change_seq once');
WITH j AS (INSERT INTO tide.jobs (queue, name) VALUES ('q1', 'by hand') RETURNING id)
INSERT INTO tide.job_tasks (job_id, replicas, request) SELECT id, 1, 'gpu=1' FROM j;
SELECT last_value AS v2 FROM tide.change_seq \gset
SELECT is(:v2::bigint - :v1::bigint, 2::bigint, 'a job and task inserted by hand bump it for each table');
SELECT results_eq($$SELECT j.service_type, j.state_reason, e.new_state, e.reason
                      FROM tide.jobs j JOIN tide.job_events e ON e.job_id = j.id WHERE j.name = 'by hand'$$,
                  $$VALUES ('training'::text, 'submitted'::text, 'pending'::text, 'submitted'::text)$$,
                  'a job inserted by hand: its insert triggers still fill it in and log it');

-- The writer: none in SQL, and nothing in SQL makes it submit.
SELECT is(tide._writer(), 'none', 'tide._writer() is none outside tide.submit');
SELECT set_config('tide.writer', 'submit', true);
SELECT is(tide._writer(), 'none', 'no setting changes it');
SELECT is((SELECT l.lanname || '/' || p.pronargs FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
            WHERE p.oid = 'tide._writer()'::regprocedure), 'c/0',
          'it is a C function of no arguments: its writer is set by tide.submit''s C code only');
SELECT is((SELECT array_agg(t.tgrelid::regclass || '.' || t.tgname ORDER BY (t.tgrelid::regclass || '.' || t.tgname) COLLATE "C") FROM pg_trigger t
            WHERE pg_get_triggerdef(t.oid) LIKE '%WHEN ((tide._writer() <> ''submit''::tide.writer))%'),
          ARRAY['tide.job_tasks.job_tasks_before_write', 'tide.job_tasks.job_tasks_change_seq',
                'tide.jobs.jobs_after_insert', 'tide.jobs.jobs_before_insert', 'tide.jobs.jobs_change_seq',
                'tide.jobs.jobs_have_tasks', 'tide.jobs.jobs_pipelines_after_insert'],
          'the triggers that step aside for tide.submit''s own rows');

-- A trigger of the owner's on both tables: records the flag for each row
-- written, and fails on a name or role 'boom' (inside tide.submit's own
-- INSERTs, while the flag is on).
CREATE TEMP TABLE seen (what text, flag boolean);
CREATE FUNCTION public.tap_watch() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    what text := CASE TG_TABLE_NAME WHEN 'jobs' THEN 'job ' || (to_jsonb(NEW) ->> 'name')
                                    ELSE 'task ' || (to_jsonb(NEW) ->> 'role') END;
BEGIN
    INSERT INTO seen VALUES (what, tide._writer() = 'submit');
    IF what = 'job nest' THEN
        PERFORM tide.submit('q1', 'gpu=1', name => 'inner', role => 'inner');
    END IF;
    IF what LIKE '% boom' THEN
        RAISE EXCEPTION 'boom in the %', split_part(what, ' ', 1);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tap_watch BEFORE INSERT ON tide.jobs FOR EACH ROW EXECUTE FUNCTION public.tap_watch();
CREATE TRIGGER tap_watch BEFORE INSERT ON tide.job_tasks FOR EACH ROW EXECUTE FUNCTION public.tap_watch();

SELECT tide.submit('q1', 'gpu=1', name => 'watched', role => 'w') AS w \gset
WITH j AS (INSERT INTO tide.jobs (queue, name) VALUES ('q1', 'direct') RETURNING id)
INSERT INTO tide.job_tasks (job_id, role, replicas, request) SELECT id, 'd', 1, 'gpu=1' FROM j;
SELECT results_eq($$SELECT what, flag FROM seen ORDER BY what$$,
                  $$VALUES ('job direct', false), ('job watched', true), ('task d', false), ('task w', true)$$,
                  'the flag is on for tide.submit''s own rows only, off for the same INSERTs by hand');

-- A tide.submit inside another's INSERT (a trigger of the owner's) leaves
-- the flag as it found it: on for the outer one's task.
DELETE FROM seen;
SELECT tide.submit('q1', 'gpu=1', name => 'nest', role => 'outer') AS nest \gset
SELECT results_eq($$SELECT what, flag FROM seen ORDER BY what$$,
                  $$VALUES ('job inner', true), ('job nest', true), ('task inner', true), ('task outer', true)$$,
                  'a nested tide.submit restores the flag it found');
SELECT is(tide._writer(), 'none', 'and it is off once the outer one returns');

-- An error inside tide.submit's INSERTs leaves the flag off: the checks of
-- the triggers meet the next writer of the session.
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', name => 'boom')$$, 'P0001', 'boom in the job',
                 'an error in tide.submit''s job INSERT');
SELECT is(tide._writer(), 'none', 'the flag is off after it');
SELECT throws_ok($$INSERT INTO tide.jobs (queue, max_retries) VALUES ('q1', 101)$$, '23514',
                 'max_retries must be at most 100, not 101', 'a bad job inserted by hand next is refused by its trigger');
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1', role => 'boom')$$, 'P0001', 'boom in the task',
                 'an error in tide.submit''s task INSERT');
SELECT is(tide._writer(), 'none', 'the flag is off after that too');
SELECT throws_ok(format($$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (%s, 'x', 1, 'gpu=1.5')$$, :w), '23514',
                 format('GPU request 1.5 of task "x" of job %s is not a whole number', :w),
                 'a bad task inserted by hand next is refused by its trigger');
GRANT EXECUTE ON FUNCTION tide._admit_job(text, text, boolean, boolean, text, integer) TO tap_exec;
SET ROLE tap_exec;
SELECT throws_ok($$SELECT tide.submit('q1', 'gpu=1')$$, '42501', 'permission denied for table jobs',
                 'a role without INSERT on tide.jobs is refused inside tide.submit, by the table''s privileges');
RESET ROLE;
SELECT is(tide._writer(), 'none', 'and the flag is off after that');
SELECT throws_like($q$DO $d$ BEGIN
                       INSERT INTO tide.jobs (queue, name) VALUES ('q1', 'no tasks');
                       SET CONSTRAINTS ALL IMMEDIATE;
                     END $d$$q$, '%has no tasks', 'a job inserted by hand without tasks is still refused at commit');

-- tide.submit's job queues no has-tasks check, but removing its task does.
SELECT throws_like(format($q$DO $d$ BEGIN
                       DELETE FROM tide.job_tasks WHERE job_id = %s;
                       SET CONSTRAINTS ALL IMMEDIATE;
                     END $d$$q$, :w), format('job %s has no tasks', :w),
                   'deleting a submitted job''s only task is refused at commit');
SELECT throws_like(format($q$DO $d$ BEGIN
                       UPDATE tide.jobs SET min_available = 2 WHERE id = %s;
                       SET CONSTRAINTS ALL IMMEDIATE;
                     END $d$$q$, :w), format('min_available 2 of job %s is above its 1 replicas', :w),
                   'raising a submitted job''s min_available above its replicas is refused at commit');

-- The extension dropped and created again in the same session: tide.submit
-- finds the new functions, tables and type (its cached ones are forgotten).
SET CONSTRAINTS ALL IMMEDIATE;
DROP EXTENSION pg_tide CASCADE;
CREATE EXTENSION pg_tide;
INSERT INTO tide.queues (name) VALUES ('q1');
SELECT lives_ok($$SELECT tide.submit('q1', 'gpu=1', role => 'again')$$,
                'tide.submit after the extension was dropped and created again in the session');
SELECT results_eq($$SELECT t.role, e.new_state FROM tide.job_tasks t JOIN tide.job_events e USING (job_id)$$,
                  $$VALUES ('again'::text, 'pending'::text)$$, 'its task and event rows are written');

SELECT * FROM finish();
ROLLBACK;
