-- R-C1: one cycle at a time.  A second session (dblink) holds the cycle's
-- advisory lock key, as a running cycle does: tide.run_cycle() returns NULL
-- at once and changes nothing; once the lock is free it runs.  And a cycle
-- is all or nothing with its transaction.
BEGIN;
CREATE EXTENSION pg_tide;
CREATE EXTENSION dblink;
SET client_min_messages = warning;
SELECT plan(11);

INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('n1', 'cpu=8, memory=16Gi');
SELECT tide.submit('q', 'cpu=1', name => 'j1') AS j1 \gset

SELECT dblink_connect('other', format('dbname=%s host=%s port=%s',
                      current_database(), split_part(current_setting('unix_socket_directories'), ',', 1),
                      current_setting('port')));
SELECT ok((SELECT t.got FROM dblink('other', format('SELECT pg_try_advisory_lock(%s)', tide._cycle_lock_key()))
                             AS t(got boolean)),
          'another session takes the cycle lock, as a running cycle would');

SELECT is(tide.run_cycle(), NULL, 'R-C1: tide.run_cycle() returns NULL while another cycle runs');
SELECT is((SELECT count(*)::int FROM tide.cycles), 0, 'and records no cycle');
SELECT is((SELECT state FROM tide.jobs WHERE id = :j1), 'pending', 'and places nothing');

SELECT ok((SELECT t.done FROM dblink('other', format('SELECT pg_advisory_unlock(%s)', tide._cycle_lock_key()))
                              AS t(done boolean)),
          'the other session lets go');
SELECT dblink_disconnect('other');
SELECT isnt(tide.run_cycle(), NULL, 'now the cycle runs');
SELECT is((SELECT state FROM tide.jobs WHERE id = :j1), 'allocated', 'and places the job');

-- all or nothing: a cycle rolled back with its transaction leaves no trace
SAVEPOINT before_cycle;
SELECT tide.submit('q', 'cpu=1', name => 'j2') AS j2 \gset
SELECT tide.run_cycle();
ROLLBACK TO SAVEPOINT before_cycle;
SELECT is((SELECT count(*)::int FROM tide.allocations), 1,
          'R-C1: after a rollback the second cycle''s allocations are gone');

-- who may run a cycle: tide_admin members, not submitters
CREATE ROLE tap_cycle_admin IN ROLE tide_admin;
CREATE ROLE tap_cycle_user IN ROLE tide_submitter;
SELECT tide.submit('q', 'cpu=1', name => 'j3') AS j3 \gset
SET LOCAL ROLE tap_cycle_user;
SELECT throws_ok('SELECT tide.run_cycle()', '42501', NULL, 'a submitter may not run a cycle');
RESET ROLE;
SET LOCAL ROLE tap_cycle_admin;
SELECT isnt(tide.run_cycle(), NULL, 'a tide_admin member runs a cycle (row-level security lets it see every job)');
RESET ROLE;
SELECT is((SELECT state FROM tide.jobs WHERE id = :j3), 'allocated', 'and it placed the job');

SELECT * FROM finish();
ROLLBACK;
