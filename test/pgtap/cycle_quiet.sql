-- Quiet cycles: a cycle in which nothing it reads changed since the last
-- complete one skips its load (tide.change_seq, tide.cycle_state).  Each
-- kind of change makes the next cycle load and act; a heartbeat does not;
-- an R-E4 min_runtime coming due with no write at all still does
-- (tide.cycle_state.recheck_at), and a victim's eviction acknowledged by its
-- launcher makes the next cycle load and place the preemptor.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(33);

-- Did cycle c load (a complete cycle), rather than stay quiet?
CREATE FUNCTION pg_temp.loaded(c bigint) RETURNS boolean LANGUAGE sql AS $$
    SELECT c IS NOT NULL AND EXISTS (SELECT 1 FROM tide.cycle_state s WHERE s.resource_group = '' AND s.cycle_id = c)
$$;
-- Cycles until one is quiet (at most 3); true if one was.
CREATE FUNCTION pg_temp.settle() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 3 LOOP
        IF NOT pg_temp.loaded(tide.run_cycle()) THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END $$;

INSERT INTO tide.queues (name, capability) VALUES ('q', 'cpu=8');
SELECT tide.register_node('n1', 'cpu=8');
SELECT tide.register_node('n2', 'cpu=8');
SELECT tide.submit('q', 'cpu=8', name => 'j1') AS j1 \gset

SELECT ok(pg_temp.loaded(tide.run_cycle()), 'the first cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :j1), 'allocated', 'and places j1');
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'the cycle after one that placed loads again');
SELECT ok(NOT pg_temp.loaded(tide.run_cycle()), 'then, nothing changed: the cycle is quiet');
SELECT is((SELECT jobs_considered FROM tide.cycles ORDER BY id DESC LIMIT 1), 0,
          'a quiet cycle still records its tide.cycles row');

SELECT tide.heartbeat('n1');
SELECT ok(NOT pg_temp.loaded(tide.run_cycle()), 'a heartbeat changes nothing the cycle reads: quiet');

-- submit
SELECT tide.submit('q', 'cpu=8', name => 'j2') AS j2 \gset
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a submit the cycle loads');
SELECT is((SELECT pending_reason IS NOT NULL FROM tide.jobs WHERE id = :j2), true,
          'and gives the new job (over its queue capability) a pending reason');
SELECT ok(pg_temp.settle(), 'then settles quiet');

-- queue capability change
UPDATE tide.queues SET capability = 'cpu=16' WHERE name = 'q';
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a queue capability change the cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :j2), 'allocated', 'and places j2 under the larger capability');
SELECT ok(pg_temp.settle(), 'then settles quiet');

-- allocation released by a launcher report
SELECT tide.submit('q', 'cpu=8', name => 'j3') AS j3 \gset
SELECT ok(pg_temp.settle(), 'a third job waits; quiet again');
SELECT tide.started(a.id), tide.exited(a.id, 0) FROM tide.allocations a WHERE a.job_id = :j1;
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a launcher reports an exit the cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :j3), 'allocated', 'and places j3 on the freed node');
SELECT ok(pg_temp.settle(), 'then settles quiet');

-- cancel, task insert, node drain, node capacity
SELECT tide.submit('q', 'cpu=8', name => 'j4') AS j4 \gset
SELECT ok(pg_temp.settle(), 'j4 waits; quiet');
SELECT tide.cancel(:j4);
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a cancel the cycle loads');
SELECT ok(pg_temp.settle(), 'quiet');
INSERT INTO tide.jobs (queue, name) VALUES ('q', 'j5') RETURNING id AS j5 \gset
INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES (:j5, 'main', 1, 'cpu=4');
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a task insert the cycle loads');
SELECT ok(pg_temp.settle(), 'quiet');
SELECT tide.drain_node('n2');
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a node drain the cycle loads');
SELECT ok(pg_temp.settle(), 'quiet');
SELECT tide.register_node('n2', 'cpu=16');
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after a node capacity change the cycle loads');

-- The clock: a fresh cluster
UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
 WHERE state <> 'released';
DELETE FROM tide.jobs;
DELETE FROM tide.nodes;
DELETE FROM tide.queues;
INSERT INTO tide.queues (name, preemption_within, min_runtime) VALUES ('p', 'lower_priority', '10 minutes');
SELECT tide.register_node('c1', 'cpu=8');
SELECT tide.submit('p', 'cpu=8', priority => 1) AS v \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :v;
-- it has run for 10 minutes but 3 seconds
UPDATE tide.allocations SET started_at = clock_timestamp() - interval '9 minutes 57 seconds' WHERE job_id = :v;
SELECT tide.submit('p', 'cpu=8', priority => 10) AS hi \gset

SELECT ok(pg_temp.loaded(tide.run_cycle()), 'the preemptor arrives: the cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :v), 'running', 'R-E4: the victim is kept, inside min_runtime');
SELECT ok(pg_temp.settle(), 'nothing is written: the cycles are quiet');
SELECT ok((SELECT recheck_at BETWEEN clock_timestamp() AND clock_timestamp() + interval '4 seconds'
             FROM tide.cycle_state WHERE resource_group = ''),
          'the last complete cycle noted when min_runtime comes due');
SELECT pg_sleep(3.5);
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'min_runtime came due with no write: the cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :v), 'evicting', 'and evicts the victim');

SELECT ok(pg_temp.settle(), 'the preemptor waits for the victim: quiet');
SELECT tide.evicted(a.id) FROM tide.allocations a WHERE a.job_id = :v AND a.state <> 'released';
SELECT ok(pg_temp.loaded(tide.run_cycle()), 'after the launcher acknowledges the eviction the cycle loads');
SELECT is((SELECT state FROM tide.jobs WHERE id = :hi), 'allocated', 'and places the preemptor');

SELECT * FROM finish();
ROLLBACK;
