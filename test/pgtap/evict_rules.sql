-- Evictions through tide.run_cycle(): seed 002's rules as a table (reclaimer
-- type x victim type x queue reclaimable x preemptable) for R-E2 and for
-- R-E1 reclaim, seed 000's idle jobs, in-queue preemption (R-E3), gang
-- eviction (R-E5), min_runtime and no ping-pong (R-E4).  Launchers are
-- simulated in SQL (tide.started for every assigned allocation).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(51);

CREATE FUNCTION pg_temp.reset() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.jobs;
    DELETE FROM tide.nodes;
    DELETE FROM tide.queues;
END $$;

-- The launchers: start every assigned allocation.
CREATE FUNCTION pg_temp.start_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.state = 'assigned';
$$;

-- One scenario: a victim job runs in queue "offline", then a job arrives in
-- queue "online"; returns the victim's state after the next cycle.
CREATE FUNCTION pg_temp.scenario(online_quota text, offline_quota text, offline_prio int,
                                 reclaimer_svc text, victim_svc text, reclaimable bool, preemptable bool)
    RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name, quota, priority, reclaimable, service_type)
    VALUES ('online', online_quota::tide.resvec, 80000, false, 'inference'),
           ('offline', offline_quota::tide.resvec, offline_prio, reclaimable, 'training');
    PERFORM tide.register_node('n1', 'cpu=16, gpu=8', 'RTX-4090');
    v := tide.submit('offline', 'cpu=1, gpu=8', service_type => victim_svc, preemptable => preemptable);
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    PERFORM tide.submit('online', 'cpu=1, gpu=8', service_type => reclaimer_svc);
    PERFORM tide.run_cycle();
    RETURN (SELECT state FROM tide.jobs WHERE id = v);
END $$;

-- R-E2 (seed 002): online queue priority 80000, offline 20000 and within its quota.
CREATE TEMP TABLE e2 AS
SELECT rs, vs, recl, pre,
       pg_temp.scenario('gpu=8', 'gpu=8', 20000, rs, vs, recl, pre) AS got,
       CASE WHEN rs = 'inference' AND vs = 'training' AND recl AND pre THEN 'evicting' ELSE 'running' END AS want
  FROM unnest(ARRAY['inference', 'training']) rs,
       unnest(ARRAY['inference', 'training']) vs,
       unnest(ARRAY[true, false]) recl,
       unnest(ARRAY[true, false]) pre
 ORDER BY 1, 2, 3 DESC, 4 DESC;
SELECT is(got, want, format('R-E2: %s reclaimer, %s victim, reclaimable %s, preemptable %s', rs, vs, recl, pre))
  FROM e2 ORDER BY rs, vs, recl DESC, pre DESC;

-- R-E1 reclaim: the offline queue has no quota (it borrows everything), equal priority.
CREATE TEMP TABLE e1 AS
SELECT rs, vs, recl, pre,
       pg_temp.scenario('gpu=8', '', 80000, rs, vs, recl, pre) AS got,
       CASE WHEN recl AND pre THEN 'evicting' ELSE 'running' END AS want
  FROM unnest(ARRAY['inference', 'training']) rs,
       unnest(ARRAY['inference', 'training']) vs,
       unnest(ARRAY[true, false]) recl,
       unnest(ARRAY[true, false]) pre
 ORDER BY 1, 2, 3 DESC, 4 DESC;
SELECT is(got, want, format('R-E1: guaranteed %s job, borrowing %s victim, reclaimable %s, preemptable %s', rs, vs, recl, pre))
  FROM e1 ORDER BY rs, vs, recl DESC, pre DESC;

-- What one eviction leaves behind (the last R-E2 positive case again).
SELECT is(pg_temp.scenario('gpu=8', 'gpu=8', 20000, 'inference', 'training', true, true), 'evicting',
          'R-E2 again: the training job is evicting');
SELECT is((SELECT count(*)::int FROM tide.evictions e JOIN tide.jobs v ON v.id = e.job_id
            WHERE v.queue = 'offline' AND e.preemptor_job_id = (SELECT id FROM tide.jobs WHERE queue = 'online')
              AND e.cycle_id = (SELECT max(id) FROM tide.cycles)
              AND e.reason LIKE 'evicted for job % of queue online (R-E2 inference reclaim)'),
          1, 'one tide.evictions row: the preemptor, the cycle, the rule');
SELECT is((SELECT array_agg(DISTINCT state) FROM tide.allocations WHERE job_id = (SELECT id FROM tide.jobs WHERE queue = 'offline')),
          ARRAY['releasing'], 'its allocations are releasing until the launcher confirms');
SELECT is((SELECT jobs_evicted FROM tide.cycles ORDER BY id DESC LIMIT 1), 1, 'the cycle counts jobs_evicted = 1');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE queue = 'online'), 'evicting 1 job to make room for it',
          'the preemptor''s pending reason says so');
SELECT is((SELECT count(*)::int FROM tide.eviction_holds WHERE job_id = (SELECT id FROM tide.jobs WHERE queue = 'online')),
          1, 'its place (one replica) is held for it');
SELECT is((SELECT count(*)::int FROM tide.job_events ev JOIN tide.jobs j ON j.id = ev.job_id
            WHERE j.queue = 'offline' AND ev.new_state = 'evicting' AND ev.cycle_id = (SELECT max(id) FROM tide.cycles)),
          1, 'a job event with the cycle');

-- Seed 000: an idle job (priority 9, not preemptable) yields to a non-idle job (priority 1).
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, reclaimable) VALUES ('a', 'cpu=8', false), ('b', 'cpu=8', false);
SELECT tide.register_node('c1', 'cpu=8, memory=16Gi');
CREATE TEMP TABLE ids AS
SELECT tide.submit('b', 'cpu=4, memory=8Gi', priority => 9, idle => true, preemptable => false) AS idle_job,
       tide.submit('a', 'cpu=4, memory=8Gi', priority => 0) AS other;
SELECT tide.run_cycle();
SELECT pg_temp.start_all();
INSERT INTO ids SELECT NULL, tide.submit('a', 'cpu=4, memory=8Gi', priority => 1);
SELECT tide.run_cycle();
SELECT is(pg_temp_state, 'evicting', 'seed 000: the idle job yields to a non-idle job of another queue')
  FROM (SELECT state AS pg_temp_state FROM tide.jobs WHERE id = (SELECT idle_job FROM ids WHERE idle_job IS NOT NULL)) x;
SELECT is((SELECT state FROM tide.jobs WHERE id = (SELECT other FROM ids WHERE idle_job IS NOT NULL)), 'running',
          'the non-idle job that was running keeps running');

-- R-E3: in-queue preemption only where the queue asks for it.
CREATE FUNCTION pg_temp.preempt(within text, vprio int, pre bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name, preemption_within) VALUES ('q', within);
    PERFORM tide.register_node('c1', 'cpu=8');
    v := tide.submit('q', 'cpu=8', priority => vprio, preemptable => pre);
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    PERFORM tide.submit('q', 'cpu=8', priority => 10);
    PERFORM tide.run_cycle();
    RETURN (SELECT state FROM tide.jobs WHERE id = v);
END $$;
SELECT is(pg_temp.preempt('lower_priority', 5, true), 'evicting', 'R-E3: lower_priority: priority 10 evicts priority 5');
SELECT is(pg_temp.preempt('never', 5, true), 'running', 'R-E3: never (the default): no in-queue preemption');
SELECT is(pg_temp.preempt('lower_priority', 10, true), 'running', 'R-E3: equal priority is kept');
SELECT is(pg_temp.preempt('lower_priority', 5, false), 'running', 'R-E3: a job that is not preemptable is kept');

-- R-E5: a gang is evicted whole (both replicas, on two nodes).
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, preemption_within) VALUES ('q', 'lower_priority');
SELECT tide.register_node('g1', 'cpu=8, gpu=4');
SELECT tide.register_node('g2', 'cpu=8, gpu=4');
DELETE FROM ids;
INSERT INTO ids SELECT tide.submit('q', 'cpu=1, gpu=4', replicas => 2, priority => 1), NULL;
SELECT tide.run_cycle();
SELECT pg_temp.start_all();
SELECT tide.submit('q', 'cpu=1, gpu=4', priority => 5);
SELECT tide.run_cycle();
SELECT is((SELECT array_agg(state || '@' || node ORDER BY node) FROM tide.allocations WHERE job_id = (SELECT idle_job FROM ids)),
          ARRAY['releasing@g1', 'releasing@g2'], 'R-E5: one replica needed, the whole gang is evicted');
SELECT is((SELECT count(*)::int FROM tide.evictions WHERE job_id = (SELECT idle_job FROM ids)), 1,
          'R-E5: one eviction row for the job');

-- R-E4: min_runtime protects a job that started less than that ago.
CREATE FUNCTION pg_temp.min_runtime(age interval) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name, preemption_within, min_runtime) VALUES ('q', 'lower_priority', '10 minutes');
    PERFORM tide.register_node('c1', 'cpu=8');
    v := tide.submit('q', 'cpu=8', priority => 1);
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    UPDATE tide.allocations SET started_at = now() - age WHERE job_id = v;
    PERFORM tide.submit('q', 'cpu=8', priority => 10);
    PERFORM tide.run_cycle();
    RETURN (SELECT state FROM tide.jobs WHERE id = v);
END $$;
SELECT is(pg_temp.min_runtime('1 minute'), 'running', 'R-E4: min_runtime 10 min: started 1 min ago, kept');
SELECT is(pg_temp.min_runtime('1 hour'), 'evicting', 'R-E4: min_runtime 10 min: started 1 hour ago, evicted');

-- R-E4 no ping-pong: a guaranteed training job of a low-priority reclaimable
-- queue does not reclaim from a borrowing inference job that could evict it back.
CREATE FUNCTION pg_temp.pingpong(pre bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name, quota, priority, reclaimable, service_type)
    VALUES ('train', 'gpu=8', 10, true, 'training'), ('infer', NULL, 100, true, 'inference');
    PERFORM tide.register_node('n1', 'cpu=16, gpu=8');
    v := tide.submit('infer', 'cpu=1, gpu=8');
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    PERFORM tide.submit('train', 'cpu=1, gpu=8', preemptable => pre);
    PERFORM tide.run_cycle();
    RETURN (SELECT state FROM tide.jobs WHERE id = v);
END $$;
SELECT is(pg_temp.pingpong(true), 'running', 'no ping-pong: the inference job could evict the preemptable training job back');
SELECT is(pg_temp.pingpong(false), 'evicting', 'the same with a training job that is not preemptable: it reclaims');

SELECT * FROM finish();
ROLLBACK;
