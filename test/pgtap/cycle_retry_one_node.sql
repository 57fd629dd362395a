-- R-L4's exception, through SQL: on a one-node cluster a retry runs again
-- on the node where its previous attempt failed (no other node could ever
-- hold it), while on a cluster with another node that could, it waits for
-- that one.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(6);
-- (retries are placed at once here; their backoff, R-T5, is run_backoff.sql's)
SET LOCAL tide.retry_backoff = 0;

INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('only', 'cpu=8, memory=16Gi, gpu=1', 'H100');
SELECT tide.submit('q', 'cpu=1, gpu=1', max_retries => 1) AS job \gset
SELECT isnt(tide.run_cycle(), NULL::bigint, 'first cycle');
SELECT id AS alloc FROM tide.allocations WHERE job_id = :job \gset
SELECT tide.started(:alloc);
SELECT tide.exited(:alloc, 3);
SELECT id AS retry FROM tide.jobs WHERE retry_of = :job \gset
SELECT is((SELECT state FROM tide.jobs WHERE id = :retry), 'pending', 'the failed attempt left a pending retry');
SELECT isnt(tide.run_cycle(), NULL::bigint, 'second cycle');
SELECT is((SELECT a.node FROM tide.allocations a WHERE a.job_id = :retry), 'only',
          'one node: the retry runs again where its attempt failed');

-- With a second node that could hold it but is busy, the retry of a job
-- that failed on 'only' waits for that node instead.
SELECT tide.register_node('spare', 'cpu=8, memory=16Gi, gpu=1', 'H100');
SELECT tide.submit('q', 'cpu=1, gpu=1', priority => 10) AS blocker \gset
SELECT tide.run_cycle();
SELECT a.id AS alloc2 FROM tide.allocations a WHERE a.job_id = :retry \gset
SELECT tide.started(:alloc2);
SELECT tide.exited(:alloc2, 4);
SELECT tide.submit('q', 'cpu=1, gpu=1', max_retries => 1) AS job2 \gset
SELECT tide.run_cycle();
SELECT a.id AS alloc3, a.node AS node3 FROM tide.allocations a WHERE a.job_id = :job2 \gset
SELECT tide.started(:alloc3);
SELECT tide.exited(:alloc3, 5);
SELECT id AS retry2 FROM tide.jobs WHERE retry_of = :job2 \gset
SELECT tide.run_cycle();
SELECT is((SELECT state FROM tide.jobs WHERE id = :retry2), 'pending',
          'two nodes, the other busy: the retry waits rather than return to its failed node');
SELECT ok((SELECT pending_reason FROM tide.jobs WHERE id = :retry2) LIKE '%avoided%',
          'and its reason says a node is avoided');

SELECT * FROM finish();
ROLLBACK;
