-- tide.schedule_maintenance / tide.unschedule_maintenance against the real
-- pg_cron of the test cluster (it serves this database).  Rolled back,
-- pg_cron's CREATE EXTENSION included.
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(6);
DROP EXTENSION IF EXISTS pg_cron;
SELECT is(tide.unschedule_maintenance(), false, 'without pg_cron there is nothing to unschedule');
SELECT throws_ok('SELECT tide.schedule_maintenance()', '55000', NULL, 'scheduling without pg_cron is a clear error');
CREATE EXTENSION pg_cron;
SELECT ok(tide.schedule_maintenance() > 0, 'schedule_maintenance() returns the pg_cron job id');
SELECT is((SELECT schedule || ' | ' || command FROM cron.job WHERE jobname = 'pg_tide_history'),
          '*/10 * * * * | SELECT tide.maintain_history()', 'every 10 minutes by default');
SELECT is(tide.unschedule_maintenance(), true, 'unschedule_maintenance() removes it');
SELECT is((SELECT count(*) FROM cron.job WHERE jobname = 'pg_tide_history'), 0::bigint, 'and it is gone');
SELECT * FROM finish();
ROLLBACK;
