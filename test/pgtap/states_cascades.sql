-- What deleting does, now that allocations, events and cycle ids are kept
-- consistent by triggers instead of foreign keys (a key check per row cost
-- a cycle a third of its writes): the same outcomes a cascading foreign key
-- gave, and the same refusal of an allocation without its task.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(15);

-- A two-role job placed by a real cycle.
INSERT INTO tide.jobs (queue, name) VALUES ('q1', 'pair') RETURNING id AS pair \gset
INSERT INTO tide.job_tasks (job_id, role, replicas, request)
VALUES (:pair, 'a', 1, 'cpu=1'), (:pair, 'b', 2, 'cpu=1');
SELECT tide.run_cycle() AS c1 \gset
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE job_id = :pair), 3, 'the cycle placed three replicas');

-- ---------------------------------------------------------------- an allocation needs its task
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                          VALUES (%s, 'c', 0, 'n3', 'cpu=1')$$, :pair),
                 '23503', NULL, 'an allocation of a role the job does not have is refused');
SELECT throws_like(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                            VALUES (%s, 'c', 0, 'n3', 'cpu=1')$$, :pair),
                   '%names task "c" of job%which does not exist', 'naming the missing task');
SELECT throws_ok($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                   VALUES (999999, 'main', 0, 'n3', 'cpu=1')$$,
                 '23503', NULL, 'and of a job that does not exist');
SELECT throws_ok(format($$INSERT INTO tide.allocations (job_id, role, replica, node, resources)
                          VALUES (%s, 'a', 5, 'nowhere', 'cpu=1')$$, :pair),
                 '23503', NULL, 'the node is still a foreign key');

-- ---------------------------------------------------------------- tasks of a placed job are frozen
SELECT throws_ok(format($$DELETE FROM tide.job_tasks WHERE job_id = %s AND role = 'b'$$, :pair),
                 '55000', NULL, 'a placed job''s task cannot be deleted');

-- ---------------------------------------------------------------- cycles can be pruned
SELECT lives_ok(format('DELETE FROM tide.cycles WHERE id = %s', :c1), 'a cycle named by allocations can be deleted');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE cycle_id = :c1), 3, 'and its allocations keep its id');

-- ---------------------------------------------------------------- deleting a job
SELECT throws_ok(format('DELETE FROM tide.jobs WHERE id = %s', :pair), '55006',
                 format('job %s is allocated: it cannot be deleted while it holds resources', :pair),
                 'a job that holds resources cannot be deleted');
SELECT tide.cancel(:pair);
SELECT throws_ok(format('DELETE FROM tide.jobs WHERE id = %s', :pair), '55006', NULL,
                 'nor while it is being evicted');
SELECT tide.evicted(id) FROM tide.allocations WHERE job_id = :pair;
SELECT is((SELECT state FROM tide.jobs WHERE id = :pair), 'cancelled', 'the job is cancelled, its allocations released');
SELECT ok((SELECT count(*) FROM tide.job_events WHERE job_id = :pair) >= 3, 'it has a history');
DELETE FROM tide.jobs WHERE id = :pair;
SELECT is((SELECT count(*)::int FROM tide.job_tasks WHERE job_id = :pair), 0, 'deleting the job deletes its tasks');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE job_id = :pair), 0, 'and its allocations');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = :pair), 0, 'and its events');

SELECT * FROM finish();
ROLLBACK;
