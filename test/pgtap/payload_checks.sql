-- A job's payload (env, workdir, labels): checked for every writer, with
-- an error naming the bad name or value; env and workdir frozen once the
-- job left pending, labels not; a retry carries the payload and the array
-- membership of the job it retries.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(30);

-- the error of a new job with this env, workdir and labels, and its task
CREATE FUNCTION pg_temp.job(env jsonb, workdir text DEFAULT NULL, labels jsonb DEFAULT '{}') RETURNS text
    LANGUAGE plpgsql AS $$
DECLARE
    id bigint;
    s text;
    m text;
    h text;
BEGIN
    INSERT INTO tide.jobs (queue, env, workdir, labels) VALUES ('q1', env, workdir, labels) RETURNING jobs.id INTO id;
    INSERT INTO tide.job_tasks (job_id, replicas, request) VALUES (id, 1, 'gpu=1');
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
    RETURN rtrim(s || ' | ' || m || ' | ' || coalesce(h, ''), ' |');
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.job(jsonb, text, jsonb) TO PUBLIC;

-- What is accepted: names a shell exports, text, numbers and booleans; an
-- absolute workdir; an object of labels.  A submitter may set them.
SET ROLE tap_alice;
SELECT is(pg_temp.job('{"EPOCHS": "10", "_x1": "a b\nc", "lr": 0.001, "DEBUG": true}', '/data/runs/e42',
                      '{"experiment": "e42", "trial": 3}'),
          'no error', 'a submitter inserts a job with env, workdir and labels');
RESET ROLE;
SELECT is((SELECT env FROM tide.jobs WHERE owner = 'tap_alice'),
          '{"lr": 0.001, "_x1": "a b\nc", "DEBUG": true, "EPOCHS": "10"}'::jsonb, 'env kept as given');
SELECT is(pg_temp.job('{}', NULL, '{}'), 'no error', 'no env, no workdir, no labels');

-- Names.
SELECT is(pg_temp.job('{"1BAD": "x"}'),
          '22023 | env name "1BAD" cannot be exported by a shell | A variable name is letters, digits and underscores, and does not start with a digit.',
          'a name starting with a digit');
SELECT is(pg_temp.job('{"MY-VAR": "x", "OK": "y"}'),
          '22023 | env name "MY-VAR" cannot be exported by a shell | A variable name is letters, digits and underscores, and does not start with a digit.',
          'a name with a dash');
SELECT is(pg_temp.job('{"": "x"}'),
          '22023 | env name "" cannot be exported by a shell | A variable name is letters, digits and underscores, and does not start with a digit.',
          'an empty name');
SELECT alike(pg_temp.job('{"A=B": "x"}'), '22023 | env name "A=B" cannot%', 'a name with =');
SELECT alike(pg_temp.job(jsonb_build_object(repeat('é', 100), 'x')),
            '22023 | env name "' || repeat('é', 57) || '..." cannot be exported by a shell%', 'a long bad name is cut');
SELECT is(pg_temp.job('{"TIDE_JOB_ID": "7"}'),
          '22023 | env variable "TIDE_JOB_ID" is set by the launcher | The launcher sets CUDA_VISIBLE_DEVICES and every TIDE_* variable itself (docs/launcher.md); choose another name.',
          'a TIDE_ name is the launcher''s');
SELECT alike(pg_temp.job('{"TIDE_ANYTHING": "7"}'), '22023 | env variable "TIDE_ANYTHING" is set by the launcher%', 'every TIDE_ name');
SELECT alike(pg_temp.job('{"CUDA_VISIBLE_DEVICES": "0"}'), '22023 | env variable "CUDA_VISIBLE_DEVICES" is set by the launcher%',
            'CUDA_VISIBLE_DEVICES is the launcher''s');
SELECT is(pg_temp.job('{"tide_lower": "ok", "TIDEX": "ok", "PATH": "/opt/bin:/usr/bin"}'), 'no error',
          'names only like the launcher''s, and PATH, are the job''s own');

-- Values.
SELECT is(pg_temp.job('{"A": null}'),
          '22023 | env variable "A" must be a string, a number or a boolean, not null | Give its value as text (a number or a boolean is exported as its JSON text); leave the name out to export nothing.',
          'a null value');
SELECT is(pg_temp.job(jsonb_build_object('CFG', jsonb_build_object('k', repeat('v', 100)))),
          '22023 | env variable "CFG" must be a string, a number or a boolean, not object {"k": "' || repeat('v', 50) || '... | Give its value as text (a number or a boolean is exported as its JSON text); leave the name out to export nothing.',
          'an object value, cut');
SELECT alike(pg_temp.job('{"L": [1, 2]}'), '22023 | env variable "L" must be a string, a number or a boolean, not array [1, 2]%', 'an array value');
SELECT is(pg_temp.job('[]'),
          '23514 | env must be a JSON object, not array | Give the variables as an object of names to text values, e.g. ''{"EPOCHS": "10"}''; ''{}'' exports none.',
          'env not an object');
SELECT is(pg_temp.job(jsonb_build_object('BIG', repeat('x', 70000))),
          '54000 | env is 70011 bytes long, the limit is 65536 | Pass large inputs in a file (in workdir) and its path in a variable.',
          'env above 64 kB');

-- workdir.
SELECT is(pg_temp.job('{}', 'runs/e42'),
          '22023 | workdir "runs/e42" is not an absolute path | Give the directory from the root, as the node sees it (e.g. /data/runs/e42); NULL starts the command in the launcher''s own directory.',
          'a relative workdir');
SELECT alike(pg_temp.job('{}', ''), '22023 | workdir "" is not an absolute path%', 'an empty workdir');
SELECT is(pg_temp.job('{}', '/' || repeat('d', 5000)),
          '54000 | workdir is 5001 bytes long, the limit is 4095 | A path the system can enter is shorter (PATH_MAX).',
          'a workdir above PATH_MAX');

-- labels.
SELECT is(pg_temp.job('{}', NULL, '"e42"'),
          '23514 | labels must be a JSON object, not string | Give free metadata as an object, e.g. ''{"experiment": "e42"}''; ''{}'' is none.',
          'labels not an object');
SELECT alike(pg_temp.job('{}', NULL, jsonb_build_object('blob', repeat('x', 70000))),
            '54000 | labels are 70012 bytes long, the limit is 65536%', 'labels above 64 kB');

-- The same function for tide.submit's arguments.
SELECT ok(tide._check_payload('{"A": "1"}', '/tmp', '{"k": 1}'), 'tide._check_payload: true for a good payload');
SELECT alike(pg_temp.err($$SELECT tide._check_payload('{"9": "1"}', NULL, '{}')$$), '22023 | env name "9" cannot%',
            'and the same error for a bad one');

-- Changes: a pending job's payload may change (and is checked); a job
-- that left pending keeps its env and workdir, its labels may change.
SELECT id AS p FROM tide.jobs WHERE owner = 'tap_alice' \gset
SELECT is(pg_temp.err(format($$UPDATE tide.jobs SET env = '{"EPOCHS": "20"}', workdir = '/data/b' WHERE id = %s$$, :p)),
          'no error', 'a pending job''s env and workdir change');
SELECT alike(pg_temp.err(format($$UPDATE tide.jobs SET env = '{"TIDE_X": "1"}' WHERE id = %s$$, :p)),
            '22023 | env variable "TIDE_X" is set by the launcher%', 'a changed env is checked');
SELECT pg_temp.place(:p, ARRAY['n1']);
SELECT is(pg_temp.err(format($$UPDATE tide.jobs SET env = '{"EPOCHS": "30"}' WHERE id = %s$$, :p)),
          format('55000 | env and workdir of job %s cannot change: the job is allocated | Only a pending job''s env and workdir may change (the launcher reads them when it starts the job); labels may change at any time.', :p),
          'an allocated job''s env is frozen');
SELECT alike(pg_temp.err(format($$UPDATE tide.jobs SET workdir = NULL WHERE id = %s$$, :p)),
            format('55000 | env and workdir of job %s cannot change: the job is allocated%%', :p), 'and its workdir');
SELECT is(pg_temp.err(format($$UPDATE tide.jobs SET labels = labels || '{"note": "slow"}' WHERE id = %s$$, :p)),
          'no error', 'its labels change');

-- A retry carries the payload and the array membership.
-- (an array of its owner's, held, so that its one member never runs)
SET ROLE tap_alice;
SELECT tide.submit_array('q1', 'gpu=1', 1, hold => true) AS arr \gset
RESET ROLE;
UPDATE tide.jobs SET max_retries = 1, array_id = :arr, array_index = 7 WHERE id = :p;
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:p)) a;
SELECT tide.exited(a, 3) FROM unnest(pg_temp.allocs(:p)) a;
SELECT results_eq(format($$SELECT env, workdir, labels, array_id, array_index FROM tide.jobs WHERE retry_of = %s$$, :p),
                  format($$VALUES ('{"EPOCHS": "20"}'::jsonb, '/data/b',
                            '{"note": "slow", "trial": 3, "experiment": "e42"}'::jsonb, %s::bigint, 7)$$, :arr),
                  'the retry has the failed job''s env, workdir, labels, array_id and array_index');

SELECT * FROM finish();
ROLLBACK;
