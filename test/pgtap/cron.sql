-- tide.schedule_cycles / tide.unschedule_cycles against the real pg_cron of
-- the test cluster (it serves this database).  Everything is rolled back,
-- pg_cron's CREATE EXTENSION included.  See docs/cadence.md.
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(43);

SELECT has_function('tide', 'schedule_cycles', ARRAY['interval'], 'tide.schedule_cycles(interval) exists');
SELECT has_function('tide', 'unschedule_cycles', '{}'::name[], 'tide.unschedule_cycles() exists');
SELECT ok(to_regprocedure('tide.cycle_loop(interval, interval)') IS NOT NULL, 'the procedure tide.cycle_loop exists');
SELECT function_returns('tide', 'schedule_cycles', ARRAY['interval'], 'bigint', 'schedule_cycles returns the pg_cron job id');
SELECT function_returns('tide', 'unschedule_cycles', '{}'::name[], 'boolean', 'unschedule_cycles returns whether there was a job');
SELECT is(tide.cron_job_name(), 'pg_tide_cycles', 'the job is named pg_tide_cycles');
SELECT ok(obj_description(p.oid, 'pg_proc') IS NOT NULL, format('%s has a comment', p.oid::regprocedure))
  FROM unnest(ARRAY['tide.schedule_cycles(interval)', 'tide.unschedule_cycles()', 'tide.cycle_loop(interval, interval)',
                    'tide.cron_check()', 'tide.cron_job_name()']::regprocedure[]) AS p(oid);
SELECT is(current_setting('cron.database_name'), current_database()::text, 'the test cluster''s pg_cron serves this database');

-- ---- without CREATE EXTENSION pg_cron ----
DROP EXTENSION IF EXISTS pg_cron;
SELECT throws_ok('SELECT tide.schedule_cycles()', '55000',
                 format('extension pg_cron is not installed in database "%s"', current_database()),
                 'pg_cron loaded but not created here: a clear error');
SELECT is(tide.unschedule_cycles(), false, 'unschedule_cycles without pg_cron: false');

CREATE EXTENSION pg_cron;
CREATE TEMP TABLE v AS
SELECT (regexp_match(extversion, '^(\d+)\.(\d+)'))[1]::int * 100 + (regexp_match(extversion, '^(\d+)\.(\d+)'))[2]::int >= 105 AS native
  FROM pg_extension WHERE extname = 'pg_cron';

-- ---- schedules ----
CREATE TEMP TABLE ids (n int, id bigint);
INSERT INTO ids SELECT 1, tide.schedule_cycles();
SELECT ok((SELECT id FROM ids WHERE n = 1) > 0, 'schedule_cycles() returns a job id');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_cycles'),
          CASE WHEN (SELECT native FROM v) THEN '1 seconds | SELECT tide.run_cycle()'
               ELSE '* * * * * | CALL tide.cycle_loop(''00:00:01'')' END,
          'default: a cycle every second (native seconds on pg_cron >= 1.5, the loop before)');
INSERT INTO ids SELECT 2, tide.schedule_cycles();
SELECT is((SELECT id FROM ids WHERE n = 2), (SELECT id FROM ids WHERE n = 1), 'scheduling again keeps the same job');
SELECT is((SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles'), 1::bigint, 'and there is one job');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_cycles@reboot'),
          CASE WHEN (SELECT native FROM v) THEN NULL ELSE '@reboot | CALL tide.cycle_loop(''00:00:01'')' END,
          'pg_cron < 1.5: the loop also starts when the server starts, not only at the next whole minute');

SELECT tide.schedule_cycles('5 seconds');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_cycles'),
          CASE WHEN (SELECT native FROM v) THEN '5 seconds | SELECT tide.run_cycle()'
               ELSE '* * * * * | CALL tide.cycle_loop(''00:00:05'')' END,
          '5 seconds');
SELECT tide.schedule_cycles('59 seconds');
SELECT is((SELECT schedule FROM cron.job WHERE jobname = 'pg_tide_cycles'),
          CASE WHEN (SELECT native FROM v) THEN '59 seconds' ELSE '* * * * *' END, '59 seconds');
SELECT tide.schedule_cycles('1 minute');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_cycles'),
          '* * * * * | SELECT tide.run_cycle()', '1 minute: a plain minute schedule');
SELECT is((SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles@reboot'), 0::bigint,
          'and no restart job: there is no loop to restart');
SELECT tide.schedule_cycles('15 minutes');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_cycles'),
          '*/15 * * * * | SELECT tide.run_cycle()', '15 minutes');
SELECT tide.schedule_cycles('1 hour');
SELECT is((SELECT schedule FROM cron.job WHERE jobname = 'pg_tide_cycles'), '0 * * * *', '1 hour');
SELECT is((SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles'), 1::bigint, 'still one job after five changes');

-- ---- bad cadences ----
SELECT throws_ok($$SELECT tide.schedule_cycles('500 milliseconds')$$, '22023',
                 'cycle interval 00:00:00.5 is shorter than one second', 'sub-second: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('1.5 seconds')$$, '22023',
                 'cycle interval 00:00:01.5 is not a whole number of seconds', 'fractional seconds: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('0 seconds')$$, '22023',
                 'cycle interval must be positive, not 00:00:00', 'zero: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('-1 second')$$, '22023',
                 'cycle interval must be positive, not -00:00:01', 'negative: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles(NULL)$$, '22023',
                 'cycle interval must be positive, not NULL', 'NULL: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('90 seconds')$$, '22023',
                 'cycle interval 00:01:30 is not supported', '90 seconds: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('2 hours')$$, '22023',
                 'cycle interval 02:00:00 is not supported', '2 hours: refused');
SELECT throws_ok($$SELECT tide.schedule_cycles('1 day')$$, '22023',
                 'cycle interval 1 day is not supported', '1 day: refused');
SELECT throws_ok($$CALL tide.cycle_loop('500 milliseconds')$$, '22023',
                 'cycle interval must be at least 1 second, not 00:00:00.5', 'the loop refuses sub-second too');
SELECT is((SELECT schedule FROM cron.job WHERE jobname = 'pg_tide_cycles'), '0 * * * *', 'a refused call leaves the schedule alone');

-- ---- unschedule ----
SELECT is(tide.unschedule_cycles(), true, 'unschedule_cycles: true when there was a job');
SELECT is((SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_cycles'), 0::bigint, 'the job is gone');
SELECT is(tide.unschedule_cycles(), false, 'a second time: false');
SELECT tide.schedule_cycles('2 seconds');
SELECT tide.unschedule_cycles();
SELECT is((SELECT count(*) FROM cron.job WHERE starts_with(jobname, 'pg_tide_cycles')), 0::bigint,
          'unschedule_cycles removes the restart job too');

-- ---- the loop cannot be hijacked through search_path ----
-- An operator whose argument types match an expression of the loop exactly
-- would win over pg_catalog's; the loop names pg_catalog's operators.
CREATE SCHEMA tap_evil;
CREATE FUNCTION tap_evil.lt(float8, integer) RETURNS boolean LANGUAGE plpgsql AS
    $$ BEGIN RAISE EXCEPTION 'trojan ran'; END $$;
CREATE OPERATOR tap_evil.< (LEFTARG = float8, RIGHTARG = integer, FUNCTION = tap_evil.lt);
SET LOCAL search_path = tap_evil, public;
SELECT throws_ok($$CALL tide.cycle_loop('1 second', '1 second')$$, '2D000', NULL,
                 'with a trojan operator on the path the loop gets as far as its COMMIT (refused in a test transaction): the trojan never ran');
RESET search_path;
SELECT ok(NOT has_function_privilege('public', 'tide.cycle_loop(interval, interval)', 'EXECUTE'),
          'PUBLIC may not CALL the loop');
SELECT ok(has_function_privilege('tide_admin', 'tide.cycle_loop(interval, interval)', 'EXECUTE'),
          'tide_admin may');

SELECT * FROM finish();
ROLLBACK;
