-- Starts that never happen (R-T4): a placed job whose replicas are not all
-- running within tide.start_timeout of its placement is released whole
-- (its running replicas too) and put back to pending, its stuck nodes
-- avoided; after tide.start_attempts such timeouts it fails, not retried.
-- How the timeout meets evictions in progress, lost nodes, running jobs
-- and the setting turned off.  Time is faked by moving the allocations'
-- created_at (the placement) into the past.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(36);

SELECT is(current_setting('tide.start_timeout'), '10min', 'tide.start_timeout: 10 minutes by default');
SELECT is(current_setting('tide.start_attempts'), '3', 'tide.start_attempts: 3 by default');
SELECT is(pg_temp.err($$SET tide.start_attempts = 0$$),
          '22023 | 0 is outside the valid range for parameter "tide.start_attempts" (1 .. 1000)', 'at least one attempt');
SELECT is(pg_temp.err($$SET tide.start_timeout = -1$$),
          '22023 | -1 s is outside the valid range for parameter "tide.start_timeout" (0 .. 31536000)', 'no negative timeout');

-- the due placements are read through the partial index of assigned allocations
SET LOCAL enable_seqscan = off;
SELECT matches(pg_temp.plan_of($$SELECT a.job_id FROM tide.allocations a
                                 WHERE a.state = 'assigned' AND a.created_at <= clock_timestamp() - interval '10 minutes'$$),
               'allocations_assigned_idx', 'the start-timeout step''s condition is an index range of allocations_assigned_idx');
SELECT matches(pg_temp.plan_of($$SELECT min(a.created_at) FROM tide.allocations a WHERE a.state = 'assigned'$$),
               'allocations_assigned_idx', 'the cycle''s check reads the earliest placement from the index');
RESET enable_seqscan;

-- a gang placed on n1 with one replica started, one stuck
SELECT tide.submit('q1', 'gpu=2', replicas => 2, max_retries => 2) AS g \gset
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(DISTINCT node, ',') FROM tide.allocations WHERE job_id = :g), 'n1', 'the gang is placed on n1');
SELECT tide.started(min(a.id)) FROM tide.allocations a WHERE a.job_id = :g;
UPDATE tide.allocations SET created_at = now() - interval '9 minutes' WHERE job_id = :g;
SELECT is((SELECT starts FROM tide._limits_due(clock_timestamp(), '10 minutes')), false, 'not due yet: the check says so');
SELECT is((SELECT starts FROM tide._limits_due(clock_timestamp(), NULL)), false, 'a NULL timeout: never due');
SELECT is((SELECT starts FROM tide._limits_due(clock_timestamp(), '5 minutes')), true, 'due with a shorter timeout');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:g), 'allocated', 'within tide.start_timeout it keeps waiting for its replicas');

-- past the timeout: the whole job is released, the running replica too
UPDATE tide.allocations SET created_at = now() - interval '11 minutes' WHERE job_id = :g;
SELECT tide.run_cycle() AS c \gset
SELECT is((SELECT state || ' ' || evict_goal || ' | ' || state_reason FROM tide.jobs WHERE id = :g),
          'evicting requeue | start timeout 00:10:00 reached before all replicas were running (1 of 3)',
          'R-T4: released with goal requeue and a reason naming the timeout');
SELECT is((SELECT string_agg(state, ',' ORDER BY id) FROM tide.allocations WHERE job_id = :g), 'releasing,releasing',
          'all of its allocations are released, the running replica too');
SELECT is((SELECT start_timeouts || ' ' || no_retry || ' ' || avoid_nodes::text FROM tide.jobs WHERE id = :g), '1 false {n1}',
          'the timeout is counted; the node where it did not start is avoided');
SELECT is((SELECT reason || ' ' || goal || ' ' || (cycle_id = :c) FROM tide.evictions WHERE job_id = :g),
          'start timeout 00:10:00 reached before all replicas were running (1 of 3) requeue true', 'an eviction row of this cycle says why');
SELECT is((SELECT jobs_evicted FROM tide.cycles WHERE id = :c), 1, 'the cycle counts it in jobs_evicted');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :g AND a.state = 'releasing';
SELECT is((SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = :g),
          'pending | requeued after eviction: start timeout 00:10:00 reached before all replicas were running (1 of 3)',
          'once its allocations are confirmed released it is pending again');

-- placed again elsewhere (n1 avoided), times out again
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(DISTINCT node, ',') FROM tide.allocations WHERE job_id = :g AND state = 'assigned'), 'n2',
          'placed again, on another node');
SET LOCAL tide.start_attempts = 2;
UPDATE tide.allocations SET created_at = now() - interval '11 minutes' WHERE job_id = :g AND state = 'assigned';
SELECT tide.run_cycle();
SELECT is((SELECT state || ' ' || evict_goal || ' ' || start_timeouts || ' ' || no_retry FROM tide.jobs WHERE id = :g),
          'evicting fail 2 true', 'R-T4: at tide.start_attempts timeouts the goal is fail');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :g AND a.state = 'releasing';
SELECT is((SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = :g),
          'failed | start timeout 00:10:00 reached before all replicas were running, 2 of 2 times (tide.start_attempts)',
          'it fails, naming the timeout and the attempts');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :g), 0, 'and is not retried, with max_retries 2');
RESET tide.start_attempts;

-- a running job is never timed out, however old its placement
SELECT tide.submit('q1', 'gpu=1') AS r \gset
SELECT tide.run_cycle();
SELECT tide.started(a.id) FROM tide.allocations a WHERE a.job_id = :r;
UPDATE tide.allocations SET created_at = now() - interval '1 day' WHERE job_id = :r;
SELECT tide.run_cycle();
SELECT is((SELECT state || ' ' || start_timeouts FROM tide.jobs WHERE id = :r), 'running 0', 'a running job is not timed out');

-- turned off: 0
SELECT tide.submit('q1', 'gpu=1') AS off \gset
SELECT tide.run_cycle();
UPDATE tide.allocations SET created_at = now() - interval '1 day' WHERE job_id = :off;
SET LOCAL tide.start_timeout = 0;
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:off), 'allocated', 'tide.start_timeout = 0 turns the check off');
-- a shorter setting takes effect at the next cycle
SET LOCAL tide.start_timeout = '30s';
SELECT tide.run_cycle();
SELECT is((SELECT state || ' | ' || state_reason FROM tide.jobs WHERE id = :off),
          'evicting | start timeout 00:00:30 reached before all replicas were running (1 of 3)', 'the setting is read by each cycle');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :off AND a.state = 'releasing';
RESET tide.start_timeout;

-- an eviction under way (a cancel) when the timeout passes: left as it is, not counted
SELECT tide.cancel(:off);
SELECT tide.submit('q1', 'gpu=1') AS e \gset
SELECT tide.run_cycle();
SELECT tide.cancel(:e);
SELECT is(pg_temp.jstate(:e), 'evicting', 'the cancel is under way (its launcher has not confirmed)');
UPDATE tide.allocations SET created_at = now() - interval '1 hour' WHERE job_id = :e;
SELECT tide.run_cycle();
SELECT is((SELECT evict_goal || ' ' || start_timeouts || ' ' || (SELECT count(*) FROM tide.evictions v WHERE v.job_id = :e)
             FROM tide.jobs WHERE id = :e),
          'cancel 0 1', 'an eviction under way keeps its goal; the timeout is not counted');
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :e AND a.state = 'releasing';
SELECT is(pg_temp.jstate(:e), 'cancelled', 'it ends cancelled');

-- a lost node: handled as lost (R-C3), the timeout is not counted
SELECT tide.submit('q1', 'gpu=1', max_retries => 1) AS l \gset
SELECT tide.run_cycle();
UPDATE tide.allocations SET created_at = now() - interval '1 hour' WHERE job_id = :l;
SELECT node AS lnode FROM tide.allocations WHERE job_id = :l \gset
SELECT tide._nodes_lost(ARRAY[:'lnode'], 'gone', true);
SELECT tide.run_cycle();
SELECT is((SELECT state || ' ' || start_timeouts || ' ' || state_reason FROM tide.jobs WHERE id = :l),
          format('failed 0 failed by eviction: replica 0 of role main lost on node %s: gone', :'lnode'),
          'a lost node''s job is handled as lost, the timeout not counted');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :l), 1, 'and retried as lost jobs are');
SELECT tide.heartbeat(:'lnode');

-- a retry counts its own timeouts
SELECT is((SELECT start_timeouts FROM tide.jobs WHERE retry_of = :l), 0, 'a retry starts with no timeouts');

-- a job put back to pending is an ordinary pending job: held, it is not placed again
SELECT tide.submit('q1', 'gpu=1') AS h \gset
SELECT tide.run_cycle();
UPDATE tide.allocations SET created_at = now() - interval '1 hour' WHERE job_id = :h;
SELECT tide.run_cycle();
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :h AND a.state = 'releasing';
SELECT tide.hold(:h);
SELECT is((SELECT state || ' ' || held FROM tide.jobs WHERE id = :h), 'pending true', 'back to pending, then held');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate(:h), 'pending', 'and not placed again while held');

-- a node with a silent launcher but heartbeats: the timeout frees the GPUs for others
SELECT tide.release(:h);
SELECT tide.cancel(:h);
SELECT tide.submit('q1', 'gpu=8', node_selector => '{}') AS a8 \gset
SELECT tide.run_cycle();
SELECT node AS a8node FROM tide.allocations WHERE job_id = :a8 AND state = 'assigned' \gset
UPDATE tide.allocations SET created_at = now() - interval '1 hour' WHERE job_id = :a8;
SELECT tide.run_cycle();
SELECT count(tide.evicted(a.id)) FROM tide.allocations a WHERE a.job_id = :a8 AND a.state = 'releasing';
SELECT is((SELECT tide.gpu_count(free_gpus) FROM tide.node_usage WHERE node = :'a8node'), 8, 'its GPUs are free again');

-- privileges: the step is the cycle's
SELECT is(has_function_privilege('tap_alice', 'tide._stop_unstarted(interval, integer)', 'EXECUTE'), false,
          'a submitter cannot run the start-timeout step');
SELECT is(has_function_privilege('tap_admin', 'tide._stop_unstarted(interval, integer)', 'EXECUTE'), true, 'an administrator can');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE start_timeouts > 0 AND state = 'pending' AND NOT held), 1,
          'the job released last waits for its next placement');

SELECT * FROM finish();
ROLLBACK;
