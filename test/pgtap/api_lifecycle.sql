-- Job roll-up from allocations: running, succeeded, failed (gang stop,
-- retry), cancel in every state, evictions with each goal, lost nodes.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(62);

-- ---- success
SELECT tide.submit('q1', 'gpu=1', replicas => 2) AS j \gset
SELECT pg_temp.place(:j, ARRAY['n1', 'n2']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:j)) a;
SELECT is(pg_temp.jstate(:j), 'running', 'all started: running');
SELECT ok((SELECT started_at IS NOT NULL FROM tide.jobs WHERE id = :j), 'started_at set');
SELECT tide.exited((pg_temp.allocs(:j))[1], 0);
SELECT is(pg_temp.jstate(:j), 'running', 'one of two exited 0: still running');
SELECT tide.exited((pg_temp.allocs(:j))[2], 0);
SELECT results_eq(format('SELECT state, exit_code, finished_at IS NOT NULL FROM tide.jobs WHERE id = %s', :j),
                  $$VALUES ('succeeded', 0, true)$$, 'all exited 0: succeeded');
SELECT results_eq(format('SELECT old_state, new_state, reason FROM tide.job_events WHERE job_id = %s ORDER BY id', :j),
                  $$VALUES (NULL, 'pending', 'submitted'), ('pending', 'allocated', 'placed by the test'),
                           ('allocated', 'running', 'all replicas started'), ('running', 'succeeded', 'all replicas exited 0')$$,
                  'the history of a successful job');

-- A replica that exits before the others started.
SELECT tide.submit('q1', 'gpu=1') AS j \gset
SELECT pg_temp.place(:j, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:j))[1], 0);
SELECT is(pg_temp.jstate(:j), 'succeeded', 'allocated -> succeeded when the only replica exits 0 unstarted');

-- ---- failure, gang stop, retry
SELECT tide.submit('q1', 'gpu=1', replicas => 3, priority => 5, max_retries => 1, name => 'flaky', command => 'run') AS f \gset
SELECT pg_temp.place(:f, ARRAY['n1', 'n2', 'n1']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:f)) a;
SELECT tide.exited((pg_temp.allocs(:f))[2], 3);
SELECT results_eq(format('SELECT state, exit_code, avoid_nodes, state_reason FROM tide.jobs WHERE id = %s', :f),
                  $$VALUES ('failed', 3, '{n2}'::text[], 'replica 1 of role main exited with code 3 on node n2')$$,
                  'first non-zero exit: failed, the node is avoided');
SELECT results_eq(format('SELECT state, release_reason FROM tide.allocations WHERE job_id = %s ORDER BY id', :f),
                  $$VALUES ('releasing', 'gang member failed'), ('released', 'exited'), ('releasing', 'gang member failed')$$,
                  'the other replicas are told to stop');
SELECT results_eq(format('SELECT reason, goal, acked_at IS NULL FROM tide.evictions WHERE job_id = %s', :f),
                  $$VALUES ('gang member failed', 'fail', true)$$, 'one eviction row for the gang');
SELECT id AS r FROM tide.jobs WHERE retry_of = :f \gset
SELECT results_eq(format($$SELECT state, attempt, queue, priority, name, command, owner = current_user, avoid_nodes, max_retries
                             FROM tide.jobs WHERE id = %s$$, :r),
                  $$VALUES ('pending', 2, 'q1', 5, 'flaky', 'run', true, '{n2}'::text[], 1)$$, 'a retry job is made');
SELECT results_eq(format('SELECT role, replicas, tide.get(request, $x$gpu$x$) FROM tide.job_tasks WHERE job_id = %s', :r),
                  $$VALUES ('main', 3, 1::numeric)$$, 'with the same tasks');
SELECT is((SELECT reason FROM tide.job_events WHERE job_id = :r), format('attempt 2: retry of failed job %s', :f), 'its submission says why');
SELECT is((SELECT created_at FROM tide.jobs WHERE id = :r), (SELECT created_at FROM tide.jobs WHERE id = :f), 'it keeps the original created_at');
SELECT tide.evicted(a) FROM unnest(pg_temp.allocs(:f)) a WHERE pg_temp.astate(a) = 'releasing';
SELECT is(pg_temp.jstate(:f), 'failed', 'still failed once its replicas stopped');
SELECT ok((SELECT acked_at IS NOT NULL FROM tide.evictions WHERE job_id = :f), 'the eviction is acknowledged');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :f), 1, 'exactly one retry');
-- The retry fails too: no retries left.
SELECT pg_temp.place(:r, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:r))[1], 1);
SELECT is(pg_temp.jstate(:r), 'failed', 'the retry failed');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :r), 0, 'no retry beyond max_retries');
SELECT is((SELECT avoid_nodes FROM tide.jobs WHERE id = :r), '{n2,n1}'::text[], 'avoid_nodes accumulates');
-- Cancelling a job that failed while its retry lives cancels the retry
-- (a failure racing the cancel made it), newest attempt of the chain first.
SELECT tide.submit('q1', 'gpu=1', max_retries => 2) AS c1 \gset
SELECT pg_temp.place(:c1, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:c1))[1], 1);
SELECT id AS c2 FROM tide.jobs WHERE retry_of = :c1 \gset
SELECT pg_temp.place(:c2, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:c2))[1], 1);
SELECT id AS c3 FROM tide.jobs WHERE retry_of = :c2 \gset
SELECT is(tide.cancel(:c1), 'cancelled', 'cancel of a failed job whose retry waits: the retry is cancelled');
SELECT is(pg_temp.jstate(:c3), 'cancelled', 'the live attempt, two retries down the chain');
SELECT is(pg_temp.jstate(:c1), 'failed', 'the failed attempts stay failed');
SELECT is(tide.cancel(:c1), 'failed', 'a second cancel finds nothing alive');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :c3), 0, 'and no retry follows a cancel');
UPDATE tide.jobs SET retry_of = :c3 WHERE id = :c1;   -- a loop, edited by hand
SELECT is(tide.cancel(:c1), 'failed', 'a retry_of loop does not make cancel loop');
-- A failing job without retries.
SELECT tide.submit('q1', 'gpu=1') AS j \gset
SELECT pg_temp.place(:j, ARRAY['n1']);
SELECT tide.exited((pg_temp.allocs(:j))[1], 137);
SELECT is(pg_temp.jstate(:j), 'failed', 'failed');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :j), 0, 'max_retries 0: no retry');
SELECT is((SELECT count(*)::int FROM tide.evictions WHERE job_id = :j), 0, 'nothing left to evict: no eviction row');

-- ---- cancel
SELECT tide.submit('q1', 'gpu=1') AS j \gset
SELECT is(tide.cancel(:j), 'cancelled', 'cancel of a pending job');
SELECT results_eq(format('SELECT state, finished_at IS NOT NULL, state_reason FROM tide.jobs WHERE id = %s', :j),
                  $$VALUES ('cancelled', true, 'cancelled')$$, 'cancelled at once');
SELECT is(tide.cancel(:j), 'cancelled', 'cancel again: a NOTICE, the same state');
SELECT is((SELECT count(*)::int FROM tide.job_events WHERE job_id = :j), 2, 'one cancel event');
SELECT throws_ok('SELECT tide.cancel(-5)', '42704', 'job -5 does not exist', 'cancel: unknown job');
SELECT throws_ok('SELECT tide.cancel(NULL)', '42704', 'job NULL does not exist', 'cancel: NULL job');

SELECT tide.submit('q1', 'gpu=1', replicas => 2) AS j \gset
SELECT pg_temp.place(:j, ARRAY['n1', 'n2']);
SELECT tide.started((pg_temp.allocs(:j))[1]);
SELECT is(tide.cancel(:j), 'evicting', 'cancel of a placed job: evicting');
SELECT is((SELECT evict_goal FROM tide.jobs WHERE id = :j), 'cancel', 'with goal cancel');
SELECT results_eq(format('SELECT reason, goal FROM tide.evictions WHERE job_id = %s', :j), $$VALUES ('cancelled', 'cancel')$$, 'an eviction row');
SELECT is((SELECT array_agg(state ORDER BY id) FROM tide.allocations WHERE job_id = :j), '{releasing,releasing}', 'assigned and running replicas are releasing');
SELECT is(tide.cancel(:j), 'evicting', 'cancel again: a NOTICE');
SELECT is((SELECT count(*)::int FROM tide.evictions WHERE job_id = :j), 1, 'no second eviction');
SELECT tide.evicted((pg_temp.allocs(:j))[1]);
SELECT is(pg_temp.jstate(:j), 'evicting', 'one replica still to stop');
SELECT tide.exited((pg_temp.allocs(:j))[2], 143);
SELECT is(pg_temp.jstate(:j), 'cancelled', 'the last replica ended: cancelled');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :j), 0, 'a non-zero exit while being evicted is no failure');
SELECT ok((SELECT acked_at IS NOT NULL FROM tide.evictions WHERE job_id = :j), 'eviction acknowledged');

-- ---- evictions made by a cycle (tide._evict), each goal
INSERT INTO tide.cycles (id) VALUES (777);
SELECT set_config('tide.cycle_id', '777', true);
SELECT tide.submit('q1', 'gpu=1', replicas => 2) AS v \gset
SELECT tide.submit('qi', 'gpu=2', priority => 9) AS p \gset
SELECT pg_temp.place(:v, ARRAY['n1']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:v)) a;
SELECT is(tide._evict(ARRAY[:v::bigint], ARRAY['reclaimed for job ' || :p], NULL, ARRAY[:p::bigint]), ARRAY[:v::bigint], '_evict returns the evicted jobs');
SELECT results_eq(format('SELECT state, evict_goal, state_reason FROM tide.jobs WHERE id = %s', :v),
                  format($$VALUES ('evicting', 'requeue', 'reclaimed for job %s')$$, :p), 'evicting, goal on_evict');
SELECT results_eq(format('SELECT cycle_id, preemptor_job_id, goal FROM tide.evictions WHERE job_id = %s', :v),
                  format($$VALUES (777::bigint, %s::bigint, 'requeue')$$, :p), 'the eviction names the cycle and the preemptor');
SELECT is((SELECT cycle_id FROM tide.job_events WHERE job_id = :v AND new_state = 'evicting'), 777::bigint, 'the event names the cycle');
SELECT set_config('tide.cycle_id', '', true);
SELECT tide.evicted(a) FROM unnest(pg_temp.allocs(:v)) a;
SELECT results_eq(format('SELECT state, evict_goal, pending_reason, started_at FROM tide.jobs WHERE id = %s', :v),
                  $$VALUES ('pending', NULL, 'requeued after eviction', NULL::timestamptz)$$, 'requeue: back to pending');
SELECT is(tide._evict(ARRAY[:v::bigint], ARRAY['again']), '{}'::bigint[], '_evict skips jobs that hold nothing');

SELECT tide.submit('q1', 'gpu=1', on_evict => 'fail', max_retries => 1) AS v \gset
SELECT pg_temp.place(:v, ARRAY['n2']);
SELECT tide._evict(ARRAY[:v::bigint], ARRAY['preempted']);
SELECT tide.evicted((pg_temp.allocs(:v))[1]);
SELECT results_eq(format('SELECT state, state_reason FROM tide.jobs WHERE id = %s', :v),
                  $$VALUES ('failed', 'failed by eviction: preempted')$$, 'on_evict fail: failed');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE retry_of = :v), 1, 'with retries left: a retry job');

-- An eviction in progress that is cancelled ends cancelled.
SELECT tide.submit('q1', 'gpu=1') AS v \gset
SELECT pg_temp.place(:v, ARRAY['n1']);
SELECT tide._evict(ARRAY[:v::bigint], ARRAY['preempted']);
SELECT tide.cancel(:v);
SELECT is((SELECT evict_goal FROM tide.jobs WHERE id = :v), 'cancel', 'cancel turns the goal to cancel');
SELECT is((SELECT goal FROM tide.evictions WHERE job_id = :v AND acked_at IS NULL), 'cancel',
          'and the open eviction row says so too');
SELECT tide.evicted((pg_temp.allocs(:v))[1]);
SELECT is(pg_temp.jstate(:v), 'cancelled', 'and it ends cancelled');

-- ---- lost node
SELECT tide.submit('q1', 'gpu=1', replicas => 2) AS k \gset
SELECT tide.submit('q1', 'gpu=1', max_retries => 2) AS kr \gset
SELECT pg_temp.place(:k, ARRAY['n1', 'n2']);
SELECT pg_temp.place(:kr, ARRAY['n2']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:k) || pg_temp.allocs(:kr)) a;
SELECT is(tide._nodes_lost(ARRAY['n2']), ARRAY[:k::bigint, :kr::bigint], '_nodes_lost returns the jobs hit');
SELECT is((SELECT state FROM tide.nodes WHERE name = 'n2'), 'down', 'the node is down');
SELECT results_eq(format('SELECT node, state, release_reason FROM tide.allocations WHERE job_id = %s ORDER BY id', :k),
                  $$VALUES ('n1', 'releasing', 'replica 1 of role main lost on node n2: node down'), ('n2', 'released', 'node down')$$,
                  'the lost replica is released, the others told to stop');
SELECT results_eq(format('SELECT state, evict_goal, avoid_nodes FROM tide.jobs WHERE id = %s', :k),
                  $$VALUES ('evicting', 'requeue', '{n2}'::text[])$$, 'no retries: evicted with its on_evict');
SELECT tide.evicted((pg_temp.allocs(:k))[1]);
SELECT is(pg_temp.jstate(:k), 'pending', 'then requeued');
SELECT results_eq(format('SELECT state, state_reason FROM tide.jobs WHERE id = %s', :kr),
                  $$VALUES ('failed', 'failed by eviction: replica 0 of role main lost on node n2: node down')$$,
                  'retries left: failed at once (nothing else live)');
SELECT results_eq(format('SELECT attempt, avoid_nodes FROM tide.jobs WHERE retry_of = %s', :kr),
                  $$VALUES (2, '{n2}'::text[])$$, 'and retried away from the lost node');

SELECT * FROM finish();
ROLLBACK;
