-- tide.run_cycle(resource_group): one group's cycle places only that
-- group's jobs and writes only its rows; its lock (R-C1 per group) keeps
-- two cycles of one group, or a group's and the whole cluster's, apart,
-- while cycles of different groups run side by side (the concurrent case:
-- test/isolation/specs/tide_group_cycles.spec).
BEGIN;
CREATE EXTENSION pg_tide;
CREATE EXTENSION dblink;
SET client_min_messages = warning;
SELECT plan(13);

INSERT INTO tide.queues (name, resource_group) VALUES ('qa', 'a'), ('qb', 'b');
SELECT tide.register_node('na', 'cpu=8', resource_group => 'a');
SELECT tide.register_node('nb', 'cpu=8', resource_group => 'b');
SELECT tide.submit('qa', 'cpu=4', name => 'a1') AS a1 \gset
SELECT tide.submit('qa', 'cpu=8', name => 'a2') AS a2 \gset
SELECT tide.submit('qb', 'cpu=4', name => 'b1') AS b1 \gset

SELECT dblink_connect('other', format('dbname=%s host=%s port=%s',
                      current_database(), split_part(current_setting('unix_socket_directories'), ',', 1),
                      current_setting('port')));
-- another session holds group a's lock, as a's running cycle does
SELECT ok((SELECT t.got FROM dblink('other',
              format('SELECT pg_try_advisory_lock_shared(%s) AND pg_try_advisory_lock(1953064037, hashtext(%L))',
                     tide._cycle_lock_key(), 'a')) AS t(got boolean)), 'another session runs a''s cycle');
SELECT is(tide.run_cycle('a'), NULL, 'R-C1 per group: a second cycle of a returns NULL at once');
SELECT is(tide.run_cycle(), NULL, 'and so does the whole-cluster cycle');
SELECT isnt(tide.run_cycle('b'), NULL, 'while b''s cycle runs');
SELECT is((SELECT state FROM tide.jobs WHERE id = :b1), 'allocated', 'and places b''s job');
-- a's cycle ends: its locks go at once (a disconnect alone frees them only
-- when that backend has exited, which may be after the next statement)
SELECT ok((SELECT t.done FROM dblink('other',
              format('SELECT pg_advisory_unlock(1953064037, hashtext(%L)) AND pg_advisory_unlock_shared(%s)',
                     'a', tide._cycle_lock_key())) AS t(done boolean)),
          'the other session lets go of a''s lock');
SELECT dblink_disconnect('other');

SELECT tide.submit('qb', 'cpu=2', name => 'b2') AS b2 \gset
SELECT isnt(tide.run_cycle('a'), NULL, 'once a''s lock is free, a''s cycle runs');
SELECT is((SELECT state FROM tide.jobs WHERE id = :a1), 'allocated', 'it places a''s job that fits');
SELECT ok((SELECT pending_reason IS NOT NULL FROM tide.jobs WHERE id = :a2), 'and gives a''s other job a reason');
SELECT is((SELECT state || coalesce(pending_reason, '-') FROM tide.jobs WHERE id = :b2), 'pending-',
          'it leaves b''s new job as it was: pending, no reason written');
SELECT is((SELECT array_agg(a.node ORDER BY a.id) FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
            WHERE j.queue = 'qa'), ARRAY['na'], 'a''s allocation is on a''s node');
SELECT is(tide.run_cycle('nosuchgroup') IS NOT NULL, true, 'a group with nothing in it has an empty cycle');
SELECT is((SELECT state FROM tide.jobs WHERE id = :b2), 'pending', 'which places nothing');

SELECT * FROM finish();
ROLLBACK;
