-- Nodes going down and coming back (R-C3): what a node keeps while down,
-- the heartbeat of a lost node, an administrator's down, resume_node, and
-- the one change a released allocation accepts (a late exit).
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(14);

INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('n1', 'cpu=8');
SELECT tide.register_node('n2', 'cpu=8');
SELECT is((SELECT state_since FROM tide.nodes WHERE name = 'n1'), now(), 'state_since starts at registration');

SELECT tide.drain_node('n1');
SELECT is(tide._nodes_lost(ARRAY['n1'], 'gone', true), '{}'::bigint[], 'the cycle loses n1 (no work on it)');
SELECT is((SELECT state || ' ' || down_reason || ' ' || state_before_down FROM tide.nodes WHERE name = 'n1'),
          'down lost draining', 'down, lost, and it was draining');
SELECT is(tide.heartbeat('n1'), 'draining', 'its heartbeat brings it back draining, and says so');
SELECT is((SELECT coalesce(down_reason, '-') || ' ' || coalesce(state_before_down, '-') FROM tide.nodes WHERE name = 'n1'),
          '- -', 'nothing of down is left');

SELECT tide._nodes_lost(ARRAY['n1'], 'by hand');
SELECT is((SELECT down_reason FROM tide.nodes WHERE name = 'n1'), 'admin', '_nodes_lost without lost: an administrator''s down');
SELECT is(tide.heartbeat('n1'), 'down', 'a heartbeat does not undo it');
SELECT is(tide.resume_node('n1'), 'draining', 'resume_node brings it back to its state before');
SELECT is(tide.resume_node('n1'), 'ready', 'and again to ready');

UPDATE tide.nodes SET state = 'down' WHERE name = 'n2';
SELECT is((SELECT down_reason || ' ' || state_before_down FROM tide.nodes WHERE name = 'n2'), 'admin ready',
          'an UPDATE to down is an administrator''s');
SELECT throws_ok($$UPDATE tide.nodes SET down_reason = NULL WHERE name = 'n2'$$, '23514', NULL,
                 'a down node says why');

-- a late exit: only the exit code and the note, on an allocation released without one
SELECT tide.resume_node('n2');
SELECT tide.submit('q', 'cpu=8') AS j \gset
SELECT tide.run_cycle();
SELECT id AS a FROM tide.allocations WHERE job_id = :j \gset
SELECT tide.started(:a);
SELECT tide._nodes_lost(ARRAY(SELECT node FROM tide.allocations WHERE id = :a), 'gone', true);
SELECT throws_ok(format($$UPDATE tide.allocations SET exit_code = 0, release_reason = 'anything' WHERE id = %s$$, :a),
                 '55000', NULL, 'a released allocation takes no other exit record');
SELECT lives_ok(format($$UPDATE tide.allocations SET exit_code = 0, release_reason = tide._late_exit_reason(release_reason, 0) WHERE id = %s$$, :a),
                'it takes its late exit with the note');
SELECT is((SELECT release_reason FROM tide.allocations WHERE id = :a), 'gone; exited 0 after that (reported late)', 'the note');

SELECT * FROM finish();
ROLLBACK;
