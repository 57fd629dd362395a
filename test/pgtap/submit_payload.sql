-- tide.submit and tide.submit_array check the payload (env, workdir,
-- labels) themselves, as the insert trigger they step aside from would:
-- the same errors as a plain INSERT, and nothing written.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(8);

SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', env => '{"1BAD": "x"}')$$),
          '22023 | env name "1BAD" cannot be exported by a shell | A variable name is letters, digits and underscores, and does not start with a digit.',
          'tide.submit refuses an env name a shell cannot export');
SELECT alike(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', env => '{"TIDE_JOB_ID": "7"}')$$),
             '22023 | env variable "TIDE_JOB_ID" is set by the launcher%',
             'tide.submit refuses the launcher''s own names');
SELECT isnt(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', workdir => 'relative/dir')$$), 'no error',
            'tide.submit refuses a relative workdir');
SELECT isnt(pg_temp.err($$SELECT tide.submit_array('q1', 'gpu=1', 3, env => '{"MY-VAR": "x"}')$$), 'no error',
            'tide.submit_array refuses a bad env too');
SELECT is((SELECT count(*)::int FROM tide.jobs), 0, 'the refused submissions wrote no job');
SELECT is(pg_temp.err($$SELECT tide.submit('q1', 'gpu=1', env => '{"EPOCHS": "10"}', workdir => '/tmp',
                                           labels => '{"experiment": "e42"}')$$),
          'no error', 'a good payload is accepted');
SELECT is((SELECT env || jsonb_build_object('workdir', workdir) || labels FROM tide.jobs),
          '{"EPOCHS": "10", "workdir": "/tmp", "experiment": "e42"}'::jsonb, 'and kept as given');
SELECT is((SELECT count(*)::int FROM tide.job_events), 1, 'with its one submission event');

SELECT * FROM finish();
ROLLBACK;
