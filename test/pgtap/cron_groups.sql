-- tide.schedule_cycles(every, per_group => true): one pg_cron job per
-- resource group, running tide.run_cycle(GROUP); it and the whole-cluster
-- schedule replace each other; tide.unschedule_cycles() removes either.
-- Against the real pg_cron of the test cluster; all rolled back.
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(7);
CREATE EXTENSION pg_cron;
CREATE TEMP TABLE v AS
SELECT (regexp_match(extversion, '^(\d+)\.(\d+)'))[1]::int * 100 + (regexp_match(extversion, '^(\d+)\.(\d+)'))[2]::int >= 105 AS native
  FROM pg_extension WHERE extname = 'pg_cron';

SELECT throws_ok($$SELECT tide.schedule_cycles('1 second', true)$$, '55000', 'no resource group to schedule cycles for',
                 'per group with no node and no queue: a clear error');
INSERT INTO tide.queues (name, resource_group) VALUES ('qa', 'a'), ('qb', 'b');
SELECT tide.register_node('na', 'cpu=8', resource_group => 'a');
SELECT tide.register_node('nb', 'cpu=8', resource_group => 'b');

SELECT ok(tide.schedule_cycles('1 second', true) > 0, 'per group: returns a job id');
SELECT is((SELECT array_agg(jobname::text || ' | ' || command ORDER BY jobname) FROM cron.job),
          CASE WHEN (SELECT native FROM v)
               THEN ARRAY['pg_tide_cycles:a | SELECT tide.run_cycle(''a'')', 'pg_tide_cycles:b | SELECT tide.run_cycle(''b'')']
               ELSE ARRAY['pg_tide_cycles:a | CALL tide.cycle_loop(''00:00:01'', NULL, ''a'')',
                          'pg_tide_cycles:a@reboot | CALL tide.cycle_loop(''00:00:01'', NULL, ''a'')',
                          'pg_tide_cycles:b | CALL tide.cycle_loop(''00:00:01'', NULL, ''b'')',
                          'pg_tide_cycles:b@reboot | CALL tide.cycle_loop(''00:00:01'', NULL, ''b'')'] END,
          'one job per resource group, each running its group''s cycle (and, on pg_cron < 1.5, its loop at server start)');
SELECT tide.schedule_cycles('1 second');
SELECT is((SELECT array_agg(jobname::text ORDER BY jobname) FROM cron.job),
          CASE WHEN (SELECT native FROM v) THEN ARRAY['pg_tide_cycles'] ELSE ARRAY['pg_tide_cycles', 'pg_tide_cycles@reboot'] END,
          'the whole-cluster schedule replaces the group jobs (they never run together)');
SELECT tide.schedule_cycles('5 seconds', true);
SELECT is((SELECT array_agg(jobname::text ORDER BY jobname) FROM cron.job),
          CASE WHEN (SELECT native FROM v) THEN ARRAY['pg_tide_cycles:a', 'pg_tide_cycles:b']
               ELSE ARRAY['pg_tide_cycles:a', 'pg_tide_cycles:a@reboot', 'pg_tide_cycles:b', 'pg_tide_cycles:b@reboot'] END,
          'and the group schedule replaces the whole-cluster job');
SELECT is(tide.unschedule_cycles(), true, 'unschedule_cycles removes group jobs');
SELECT is((SELECT count(*)::int FROM cron.job), 0, 'none left');

SELECT * FROM finish();
ROLLBACK;
