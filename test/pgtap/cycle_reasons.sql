-- Pending reasons (R-C2) under tide.reason_updates_per_cycle: a cycle
-- rewrites at most that many job rows, placements included, for changed
-- reasons (jobs without a reason first, then in walk order), leaves the rest
-- in tide.reason_backlog,
-- and tide.pending shows the latest reason of every pending job either way.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(29);

INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('n1', 'cpu=8, memory=64Gi, gpu=1', 'H100');
-- One job fills the node; twelve wait, i = 1 first in the walk (priority).
SELECT tide.submit('q', 'cpu=1, gpu=1', priority => 100) AS first \gset
CREATE TEMP TABLE waiting AS
SELECT i, tide.submit('q', 'cpu=1, gpu=1', priority => 13 - i) AS id FROM generate_series(1, 12) i;

CREATE FUNCTION pg_temp.written(VARIADIC ids bigint[]) RETURNS bigint[] LANGUAGE sql AS
    $$ SELECT coalesce(array_agg(w.i ORDER BY w.i), '{}') FROM waiting w JOIN tide.jobs j ON j.id = w.id
        WHERE j.pending_reason IS NOT NULL AND w.i = ANY (ids) $$;
CREATE FUNCTION pg_temp.backlog_ids() RETURNS bigint[] LANGUAGE sql AS
    $$ SELECT coalesce(array_agg(u.id ORDER BY u.id), '{}')
         FROM tide.reason_backlog r, unnest(r.job_ids) u(id) $$;
CREATE FUNCTION pg_temp.ids_of(lo int, hi int) RETURNS bigint[] LANGUAGE sql AS
    $$ SELECT array_agg(id ORDER BY id) FROM waiting WHERE i BETWEEN lo AND hi $$;

SELECT is(current_setting('tide.reason_updates_per_cycle'), '1000', 'the default budget is 1000 job rows a cycle');

-- ---------------------------------------------------------------- a budget of 5
SET tide.reason_updates_per_cycle = 5;
SELECT tide.run_cycle() AS c1 \gset
SELECT is((SELECT state FROM tide.jobs WHERE id = :first), 'allocated', 'the first job is placed');
SELECT is(pg_temp.written(VARIADIC (SELECT array_agg(i::bigint) FROM waiting)), '{1,2,3,4}',
          'the placed job counts against the budget: four reasons are written, the first four jobs of the walk');
SELECT is((SELECT reasons_deferred FROM tide.cycles WHERE id = :c1), 8, 'the cycle counts eight deferred');
SELECT is(pg_temp.backlog_ids(), pg_temp.ids_of(5, 12), 'the other eight are in tide.reason_backlog');
SELECT is((SELECT count(*)::int FROM tide.reason_backlog), 1, 'one backlog row per distinct reason');
SELECT is((SELECT cycle_id FROM tide.reason_backlog), :c1::bigint, 'with the cycle that left it');
SELECT is((SELECT reason FROM tide.reason_backlog),
          'no ready node has room for cpu=1, gpu=1 (1 node: short of gpu on 1)',
          'the backlog holds the same text a job row would');
SELECT is((SELECT count(*)::int FROM tide.pending WHERE pending_reason IS NULL), 0,
          'tide.pending shows a reason for every pending job');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = (SELECT id FROM waiting WHERE i = 12)),
          'no ready node has room for cpu=1, gpu=1 (1 node: short of gpu on 1)',
          'also for a job whose row has none yet');

-- The column catches up over the next cycles.
SELECT tide.run_cycle() AS c2 \gset
SELECT is(pg_temp.written(VARIADIC (SELECT array_agg(i::bigint) FROM waiting)), '{1,2,3,4,5,6,7,8,9}',
          'the next cycle, which places nothing, writes the next five');
SELECT is((SELECT reasons_deferred FROM tide.cycles WHERE id = :c2), 3, 'and defers three');
SELECT tide.run_cycle() AS c3 \gset
SELECT is((SELECT count(*)::int FROM waiting w JOIN tide.jobs j ON j.id = w.id WHERE j.pending_reason IS NULL), 0,
          'after three cycles every job row has its reason');
SELECT is(pg_temp.backlog_ids(), '{}', 'and the backlog is empty');
SELECT is((SELECT reasons_deferred FROM tide.cycles WHERE id = :c3), 0, 'nothing deferred');

-- Nothing changed: no job row is rewritten.
CREATE TEMP TABLE before AS SELECT id, ctid AS tid FROM tide.jobs;
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.jobs j JOIN before b ON b.id = j.id AND b.tid = j.ctid), 13,
          'a cycle with nothing new to say rewrites no job row');

-- ---------------------------------------------------------------- jobs without a reason first
-- A second node: i = 1 is placed there, the others' numbers change ("2
-- nodes"), and a new job arrives last in the walk.  A budget of exactly the
-- placement and the jobs without a reason writes the new job, not the
-- earlier changed ones.
SELECT tide.register_node('n2', 'cpu=8, memory=64Gi, gpu=1', 'H100');
SELECT tide.submit('q', 'cpu=1, gpu=1', priority => 0) AS late \gset
SET tide.reason_updates_per_cycle = 2;
SELECT tide.run_cycle() AS c5 \gset
SELECT is((SELECT state FROM tide.jobs WHERE id = (SELECT id FROM waiting WHERE i = 1)), 'allocated',
          'the first waiting job is placed on the new node');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :late),
          'no ready node has room for cpu=1, gpu=1 (2 nodes: short of gpu on 2)',
          'the new job, last in the walk but without a reason, is written first');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = (SELECT id FROM waiting WHERE i = 2)),
          'no ready node has room for cpu=1, gpu=1 (1 node: short of gpu on 1)',
          'a job that had a reason keeps the old one in its row');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = (SELECT id FROM waiting WHERE i = 2)),
          'no ready node has room for cpu=1, gpu=1 (2 nodes: short of gpu on 2)',
          'while tide.pending shows the new one');
SELECT is(pg_temp.backlog_ids(), pg_temp.ids_of(2, 12), 'the changed reasons wait in the backlog, newest cycle only');

-- ---------------------------------------------------------------- marks are never deferred
SET tide.reason_updates_per_cycle = 0;
SELECT tide.submit('q', 'cpu=1, gpu=1', gpu_type => 'B200') AS b200 \gset
SELECT tide.run_cycle();
SELECT is((SELECT unschedulable FROM tide.jobs WHERE id = :b200), true, 'budget 0: an unschedulable job is still marked');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = :b200), 'no node with gpu_type B200 in the resource group',
          'with its reason in the row');
SELECT is(pg_temp.backlog_ids(), pg_temp.ids_of(2, 12), 'budget 0: every changed reason goes to the backlog');

-- ---------------------------------------------------------------- no limit
SET tide.reason_updates_per_cycle = -1;
SELECT tide.run_cycle() AS c7 \gset
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE state = 'pending'
              AND pending_reason IS DISTINCT FROM (SELECT p.pending_reason FROM tide.pending p WHERE p.job_id = jobs.id)), 0,
          '-1: every reason is written at once');
SELECT is(pg_temp.backlog_ids(), '{}', '-1: the backlog is empty');

SELECT throws_ok($$SET tide.reason_updates_per_cycle = -2$$, '22023', NULL, 'the budget is -1 or more');

-- ---------------------------------------------------------------- placed on
-- A placed job's reason names the nodes it went to, at most three.
SELECT tide.register_node('m' || i, 'cpu=8, gpu=1', 'H100') FROM generate_series(1, 7) i;
SELECT tide.submit('q', 'cpu=1, gpu=1', replicas => 5, priority => 1000) AS five \gset
SELECT tide.submit('q', 'cpu=1, gpu=1', replicas => 2, priority => 999) AS two \gset
SELECT tide.run_cycle();
SELECT matches((SELECT state_reason FROM tide.jobs WHERE id = :five), '^placed on m\d, m\d, m\d and more$',
               'a job on five nodes: three named and more');
SELECT matches((SELECT state_reason FROM tide.jobs WHERE id = :two), '^placed on m\d, m\d$',
               'a job on two nodes: both named');

SELECT * FROM finish();
ROLLBACK;
