-- tide.check_replication() on a single server (no standby): every check
-- that a failover could lose acknowledged work says so (R-C6, docs/ha.md).
-- The synchronous pair is checked for real by test/e2e/ha_patroni.sh, the
-- standby's own answer by test/e2e/standby_analysts.sh.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(11);

SELECT is((SELECT array_agg(check_name ORDER BY check_name) FROM tide.check_replication()),
          ARRAY['standbys', 'synchronous standby', 'synchronous_commit', 'synchronous_standby_names'],
          'a primary answers four checks');
SELECT is((SELECT ok FROM tide.check_replication() WHERE check_name = 'standbys'), false,
          'no standby: not ok');
SELECT matches((SELECT detail FROM tide.check_replication() WHERE check_name = 'standbys'),
               '^no standby is connected', 'and the detail says there is none');
SELECT is((SELECT ok FROM tide.check_replication() WHERE check_name = 'synchronous_standby_names'), false,
          'empty synchronous_standby_names: not ok');
SELECT matches((SELECT detail FROM tide.check_replication() WHERE check_name = 'synchronous_standby_names'),
               'asynchronous.*ids are handed out twice.*synchronous_mode: true',
               'and the detail says what asynchronous replication loses and how to fix it');
SELECT is((SELECT ok FROM tide.check_replication() WHERE check_name = 'synchronous standby'), false,
          'no synchronous standby streaming: not ok');

SET LOCAL synchronous_commit = off;
SELECT is((SELECT ok FROM tide.check_replication() WHERE check_name = 'synchronous_commit'), false,
          'synchronous_commit off: not ok');
SELECT matches((SELECT detail FROM tide.check_replication() WHERE check_name = 'synchronous_commit'),
               '^off: commits do not wait', 'and the detail names the value');
SET LOCAL synchronous_commit = on;
SELECT is((SELECT ok FROM tide.check_replication() WHERE check_name = 'synchronous_commit'), true,
          'synchronous_commit on: ok');

-- operators and monitoring read it; submitters do not
SET LOCAL ROLE tap_reader;
SELECT is((SELECT count(*) FROM tide.check_replication()), 4::bigint, 'a reader runs it');
RESET ROLE;
SET LOCAL ROLE tap_alice;
SELECT throws_ok('SELECT * FROM tide.check_replication()', '42501', NULL, 'a submitter may not');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
