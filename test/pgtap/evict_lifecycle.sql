-- Evictions over several cycles through tide.run_cycle(), launchers
-- simulated in SQL: the freed resources are held for the preemptor until
-- the launchers confirm and it is placed there (R-E6); on_evict requeue
-- keeps the job's place, fail ends it, retries go to the retry lane (R-E5,
-- seed 000); node loss by heartbeat with and without retries (R-C3);
-- a draining node takes no new work and loses none.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(33);

CREATE FUNCTION pg_temp.reset() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.jobs;
    DELETE FROM tide.nodes;
    DELETE FROM tide.queues;
END $$;
CREATE FUNCTION pg_temp.start_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.state = 'assigned';
$$;
CREATE FUNCTION pg_temp.confirm_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.state = 'releasing';
$$;
CREATE FUNCTION pg_temp.cycle() RETURNS bigint LANGUAGE sql AS $$ SELECT tide.run_cycle() $$;
CREATE TEMP TABLE j (name text PRIMARY KEY, id bigint);
CREATE FUNCTION pg_temp.id(n text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM j WHERE name = n $$;

-- ---------------------------------------------------------------- R-E6
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, priority, reclaimable, service_type)
VALUES ('online', 'gpu=8', 80000, false, 'inference'), ('offline', 'gpu=8', 20000, true, 'training');
SELECT tide.register_node('n1', 'cpu=16, gpu=8', 'RTX-4090');
INSERT INTO j VALUES ('V', tide.submit('offline', 'cpu=1, gpu=8'));
SELECT pg_temp.cycle();
SELECT pg_temp.start_all();
CREATE TEMP TABLE v_created AS SELECT created_at FROM tide.jobs WHERE id = pg_temp.id('V');
INSERT INTO j VALUES ('P', tide.submit('online', 'cpu=1, gpu=8', priority => 0));
SELECT pg_temp.cycle();
SELECT is(pg_temp_s, 'evicting', 'R-E2: the training job V is evicted for inference job P')
  FROM (SELECT state AS pg_temp_s FROM tide.jobs WHERE id = pg_temp.id('V')) x;

-- J: same queue, higher priority, first in the walk; it would fit in 4 GPUs
INSERT INTO j VALUES ('J', tide.submit('online', 'cpu=1, gpu=4', priority => 5));
SELECT pg_temp.cycle();
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('J')), 'pending', 'R-E6: V still stopping: J gets nothing');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = pg_temp.id('P')),
          'waiting for the jobs evicted for it to stop; their resources are held for it',
          'R-E6: P waits, and says why');
SELECT is((SELECT count(*)::int FROM tide.evictions), 1, 'no second eviction while the first is under way');

SELECT pg_temp.confirm_all();
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('V')), 'pending', 'R-E5: confirmed: V requeued (on_evict requeue)');
SELECT is((SELECT created_at FROM tide.jobs WHERE id = pg_temp.id('V')), (SELECT created_at FROM v_created),
          'R-E5: V keeps its place (created_at unchanged)');
SELECT isnt((SELECT acked_at FROM tide.evictions WHERE job_id = pg_temp.id('V')), NULL, 'the eviction is acknowledged');

SELECT pg_temp.cycle();
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('P')), 'allocated',
          'R-E6: P is placed once the launcher confirmed');
SELECT is((SELECT gpus::text FROM tide.allocations WHERE job_id = pg_temp.id('P')), '0-7', 'R-E6: on the freed GPUs 0-7');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('J')), 'pending', 'R-E6: J, first in the walk, did not take them');
SELECT is((SELECT count(*)::int FROM tide.eviction_holds), 0, 'the hold is gone once P is placed');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('V')), 'pending', 'V waits (it cannot evict P back)');

-- ---------------------------------------------------------------- R-E5 goals and retries
CREATE FUNCTION pg_temp.evict_goal(goal text, retries int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name, quota, priority, reclaimable, service_type)
    VALUES ('online', 'gpu=8', 80000, false, 'inference'), ('offline', 'gpu=8', 20000, true, 'training');
    PERFORM tide.register_node('n1', 'cpu=16, gpu=8');
    v := tide.submit('offline', 'cpu=1, gpu=8', on_evict => goal, max_retries => retries);
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    PERFORM tide.submit('online', 'cpu=1, gpu=8');
    PERFORM tide.run_cycle();
    PERFORM pg_temp.confirm_all();
    RETURN (SELECT state FROM tide.jobs WHERE id = v) || ', ' ||
           coalesce((SELECT string_agg(format('retry %s attempt %s', state, attempt), ',') FROM tide.jobs WHERE retry_of = v), 'no retry');
END $$;
SELECT is(pg_temp.evict_goal('requeue', 0), 'pending, no retry', 'R-E5: on_evict requeue: back to pending');
SELECT is(pg_temp.evict_goal('fail', 0), 'failed, no retry', 'R-E5: on_evict fail: failed');
SELECT is(pg_temp.evict_goal('fail', 1), 'failed, retry pending attempt 2', 'R-E5: retries left: failed and retried');
SELECT is(pg_temp.evict_goal('requeue', 1), 'failed, retry pending attempt 2', 'R-E5: retries left win over requeue: the retry takes the retry lane');
SELECT is((SELECT state FROM tide.jobs WHERE retry_of IS NOT NULL), 'pending', 'seed 000: the retry job waits for the freed resources');
SELECT pg_temp.cycle();
SELECT is((SELECT state FROM tide.jobs WHERE retry_of IS NOT NULL), 'pending', 'R-E6: ... which are held for the preemptor');
SELECT is((SELECT state FROM tide.jobs WHERE queue = 'online'), 'allocated', 'the preemptor is placed');

-- ---------------------------------------------------------------- R-C3 node loss
CREATE FUNCTION pg_temp.lose_node(retries int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
BEGIN
    PERFORM pg_temp.reset();
    INSERT INTO tide.queues (name) VALUES ('q');
    PERFORM tide.register_node('c1', 'cpu=8');
    PERFORM tide.register_node('c2', 'cpu=8');
    a := tide.submit('q', 'cpu=8', max_retries => retries);
    PERFORM tide.run_cycle();
    PERFORM pg_temp.start_all();
    UPDATE tide.nodes SET heartbeat_at = now() - interval '10 minutes', state_since = now() - interval '10 minutes'
     WHERE name = (SELECT node FROM tide.allocations WHERE job_id = a);
    PERFORM tide.run_cycle();
    RETURN (SELECT string_agg(n.name || ' ' || n.state, ', ' ORDER BY n.name) FROM tide.nodes n) || '; job ' ||
           (SELECT state FROM tide.jobs WHERE id = a) || '; retry ' ||
           coalesce((SELECT state || ' on ' || (SELECT node FROM tide.allocations x WHERE x.job_id = r.id AND x.state <> 'released')
                       FROM tide.jobs r WHERE r.retry_of = a), 'none') || '; live on ' ||
           coalesce((SELECT string_agg(node, ',') FROM tide.allocations WHERE job_id = a AND state <> 'released'), 'none');
END $$;
SELECT is(pg_temp.lose_node(0), 'c1 down, c2 ready; job allocated; retry none; live on c2',
          'R-C3: heartbeat 10 min old: c1 down, the job requeued and placed on c2 at once');
SELECT is((SELECT release_reason FROM tide.allocations WHERE node = 'c1'), 'no heartbeat for more than 00:05:00',
          'R-C3: the allocation was released as lost, with the reason');
SELECT is((SELECT avoid_nodes FROM tide.jobs), ARRAY['c1'], 'R-L4: the lost node is avoided next time');
SELECT is((SELECT jobs_evicted FROM tide.cycles ORDER BY id DESC LIMIT 1), 1, 'R-C3: the cycle counts the lost job in jobs_evicted');
SELECT is(pg_temp.lose_node(1), 'c1 down, c2 ready; job failed; retry allocated on c2; live on none',
          'R-C3 with retries left: the job fails, its retry is placed on c2');

-- seed 000's retry scenario: A (auto-retry) runs, B waits, the queue has
-- room for one; A is interrupted (its node is lost): its retry A1 gets the
-- room, B keeps waiting though it was submitted before A1 existed (R-O3).
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, capability) VALUES ('q', 'cpu=2, memory=4Gi');
SELECT tide.register_node('c1', 'cpu=8, memory=16Gi');
SELECT tide.register_node('c2', 'cpu=8, memory=16Gi');
INSERT INTO j VALUES ('A', tide.submit('q', 'cpu=2, memory=4Gi', max_retries => 1)) ON CONFLICT (name) DO UPDATE SET id = EXCLUDED.id;
SELECT pg_temp.cycle();
SELECT pg_temp.start_all();
INSERT INTO j VALUES ('B', tide.submit('q', 'cpu=2, memory=4Gi')) ON CONFLICT (name) DO UPDATE SET id = EXCLUDED.id;
SELECT pg_temp.cycle();
UPDATE tide.nodes SET heartbeat_at = now() - interval '1 hour', state_since = now() - interval '1 hour' WHERE name = 'c1';
SELECT pg_temp.cycle();
SELECT is((SELECT state || ' on ' || (SELECT node FROM tide.allocations a WHERE a.job_id = r.id)
             FROM tide.jobs r WHERE r.retry_of = pg_temp.id('A')), 'allocated on c2',
          'seed 000: A interrupted, its retry A1 takes the free room');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('B')), 'pending', 'seed 000: B, submitted before A1 was made, keeps waiting');

-- silence counts from the last heartbeat, or from registration when there
-- was none; the setting 0 turns the check off
SELECT pg_temp.reset();
SELECT tide.register_node('c1', 'cpu=8');
SELECT tide.register_node('c2', 'cpu=8');
SELECT tide.register_node('c3', 'cpu=8');
UPDATE tide.nodes SET state_since = now() - interval '7 minutes' WHERE name IN ('c1', 'c2');
UPDATE tide.nodes SET heartbeat_at = now() - interval '6 minutes' WHERE name = 'c2';
SET LOCAL tide.node_timeout = 0;
SELECT pg_temp.cycle();
SELECT is((SELECT string_agg(state, ',' ORDER BY name) FROM tide.nodes), 'ready,ready,ready', 'tide.node_timeout = 0: nothing is marked down');
SET LOCAL tide.node_timeout = '10min';
SELECT pg_temp.cycle();
SELECT is((SELECT string_agg(state, ',' ORDER BY name) FROM tide.nodes), 'ready,ready,ready', 'tide.node_timeout 10 min: 6 and 7 min of silence are fine');
RESET tide.node_timeout;
SELECT is((SELECT string_agg(n.name || ': ' || n.reason, '; ' ORDER BY n.name) FROM tide._nodes_silent('5 min') n),
          'c1: no heartbeat since it was registered, more than 00:05:00 ago; c2: no heartbeat for more than 00:05:00',
          'R-C3: a node whose launcher never sent a heartbeat is silent since its registration');
SELECT pg_temp.cycle();
SELECT is((SELECT string_agg(state || '/' || coalesce(down_reason, '-') || '/' || coalesce(state_before_down, '-'), ',' ORDER BY name) FROM tide.nodes),
          'down/lost/ready,down/lost/ready,ready/-/-',
          'default 5 min: c1 (never a heartbeat, registered 7 min ago) and c2 go down as lost; c3, registered now, stays ready');

-- ---------------------------------------------------------------- draining
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, preemption_within) VALUES ('q', 'lower_priority');
SELECT tide.register_node('d1', 'cpu=8');
INSERT INTO j VALUES ('low', tide.submit('q', 'cpu=4', priority => 1)) ON CONFLICT (name) DO UPDATE SET id = EXCLUDED.id;
SELECT pg_temp.cycle();
SELECT pg_temp.start_all();
SELECT tide.drain_node('d1');
INSERT INTO j VALUES ('high', tide.submit('q', 'cpu=4', priority => 9)) ON CONFLICT (name) DO UPDATE SET id = EXCLUDED.id;
SELECT pg_temp.cycle();
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('low')), 'running', 'draining: the running job is not evicted');
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.id('high')), 'pending', 'draining: no new work on d1, though 4 cpu are free');
SELECT is((SELECT count(*)::int FROM tide.evictions), 0, 'draining: no eviction');

SELECT * FROM finish();
ROLLBACK;
