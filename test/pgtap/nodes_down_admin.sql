-- An administrator takes a node out now (R-C3): tide.down_node, and a
-- plain UPDATE of tide.nodes.state to down, release the node's live
-- allocations with the reason and handle their jobs as for a lost node.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(16);

SELECT tide.submit('q1', 'gpu=2', max_retries => 1) AS r \gset
SELECT tide.submit('q1', 'gpu=1') AS q \gset
SELECT tide.submit('q1', 'gpu=1', on_evict => 'fail') AS f \gset
SELECT pg_temp.place(:r, ARRAY['n1']);
SELECT pg_temp.place(:q, ARRAY['n1']);
SELECT pg_temp.place(:f, ARRAY['n2']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:r) || pg_temp.allocs(:q)) a;

SELECT is(tide.down_node('n1', 'bad PSU'), 'down', 'tide.down_node returns the new state');
SELECT is((SELECT state || ' ' || down_reason FROM tide.nodes WHERE name = 'n1'), 'down admin', 'an administrator''s down');
SELECT is((SELECT array_agg(DISTINCT state || ': ' || release_reason) FROM tide.allocations WHERE node = 'n1'),
          ARRAY['released: node taken down: bad PSU'], 'its live allocations are released at once, with the reason');
SELECT is(pg_temp.jstate(:r), 'failed', 'a job with retries left fails');
SELECT is((SELECT state || ' ' || coalesce(begin_at::text, 'at once') || ' ' || ('n1' = ANY (avoid_nodes)) FROM tide.jobs WHERE retry_of = :r),
          'pending at once true', 'and its retry is pending at once, avoiding the node');
SELECT is(pg_temp.jstate(:q), 'pending', 'a job without retries is requeued (on_evict requeue)');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE node = 'n1' AND state <> 'released'), 0, 'nothing live is left there');
SELECT is(tide.heartbeat('n1'), 'down', 'its launcher''s heartbeat does not bring it back');
SELECT is(tide.resume_node('n1'), 'ready', 'tide.resume_node does');

-- a plain UPDATE does the same
UPDATE tide.nodes SET state = 'down' WHERE name = 'n2';
SELECT is((SELECT array_agg(DISTINCT state || ': ' || release_reason) FROM tide.allocations WHERE node = 'n2'),
          ARRAY['released: node taken down (UPDATE of tide.nodes)'], 'UPDATE ... SET state = ''down'' releases the work too');
SELECT is(pg_temp.jstate(:f), 'failed', 'an assigned job with on_evict fail fails');

-- errors
SELECT is(pg_temp.err($$SELECT tide.down_node('nope')$$), '42704 | node "nope" does not exist', 'an unknown node');
SELECT is(pg_temp.err($$SELECT tide.down_node(NULL)$$), '22004 | node must not be NULL | Name one of the nodes in tide.nodes.', 'NULL');
SELECT is(tide.down_node('n2'), 'down', 'a node already down: nothing changes');
SET ROLE tap_alice;
SELECT is(pg_temp.err($$SELECT tide.down_node('n3')$$), '42501 | permission denied for function down_node', 'a submitter may not');
RESET ROLE;
SELECT is(tide.down_node('n3'), 'down', 'without work and without a reason');

SELECT * FROM finish();
ROLLBACK;
