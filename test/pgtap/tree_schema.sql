-- Queue trees, the schema side (R-A3, R-P4; extension/27b_queue_tree.sql):
-- every refusal with its SQLSTATE and message, renames and moves that keep
-- every job, allocation and state, deletes refused, holds over subtrees,
-- and the views' tree columns.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(69);

-- A (gpu=10): a1, a2 (gpu=5 each); B (gpu=10): b1 (gpu=5).  Children
-- listed before their parent in one statement: the checks run at its end.
SELECT lives_ok($$INSERT INTO tide.queues (name, parent, quota) VALUES
                  ('a1', 'A', 'gpu=5'), ('a2', 'A', 'gpu=5'), ('A', NULL, 'gpu=10'),
                  ('B', NULL, 'gpu=10'), ('b1', 'B', 'gpu=5')$$,
                'a tree, children before their parents in one INSERT');
SELECT is((SELECT array_agg(name || '<' || coalesce(parent, '-') ORDER BY name) FROM tide.queues WHERE name IN ('A', 'a1', 'a2', 'B', 'b1')),
          ARRAY['A<-', 'B<-', 'a1<A', 'a2<A', 'b1<B'], 'each queue names its parent');

-- ---- the parent exists
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('z', 'nope')$$,
                 '23503', 'parent "nope" of queue "z" does not exist', 'a missing parent, at insert');
SELECT throws_ok($$UPDATE tide.queues SET parent = 'nope' WHERE name = 'b1'$$,
                 '23503', 'parent "nope" of queue "b1" does not exist', 'a missing parent, at update');

-- ---- no cycle
SELECT throws_ok($$UPDATE tide.queues SET parent = 'a1' WHERE name = 'A'$$,
                 '42P19', 'queue "A" cannot be under "a1": "a1" is under "A"', 'a queue under its own child');
SELECT throws_ok($$UPDATE tide.queues SET parent = 'a2' WHERE name = 'a2'$$,
                 '42P19', 'queue "a2" cannot be its own parent', 'a queue under itself');
INSERT INTO tide.queues (name) VALUES ('c1'), ('c2'), ('c3');
UPDATE tide.queues SET parent = 'c1' WHERE name = 'c2';
UPDATE tide.queues SET parent = 'c2' WHERE name = 'c3';
SELECT throws_ok($$UPDATE tide.queues SET parent = 'c3' WHERE name = 'c1'$$,
                 '42P19', 'queue "c1" cannot be under "c3": "c3" is under "c1"', 'a loop three queues long');

-- ---- owner limits are a leaf's
SELECT throws_ok($$UPDATE tide.queues SET owner_capability = 'gpu=4' WHERE name = 'A'$$,
                 '55000', 'owner_capability of queue "A" cannot be set: the queue has child queues',
                 'no owner limit on a queue with children');
INSERT INTO tide.queues (name, owner_capability) VALUES ('o1', 'gpu=2');
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('o1k', 'o1')$$,
                 '55000', 'queue "o1" has an owner_capability (gpu=2) and cannot have child queues',
                 'no children for a queue with an owner limit');
UPDATE tide.queues SET owner_capability = NULL, owner_fair_share = true WHERE name = 'o1';
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('o1k', 'o1')$$,
                 '55000', 'queue "o1" has owner_fair_share set and cannot have child queues',
                 'no children for a queue that orders its owners');
SELECT throws_ok($$UPDATE tide.queues SET owner_fair_share = true WHERE name = 'A'$$,
                 '55000', 'owner_fair_share of queue "A" cannot be set: the queue has child queues',
                 'no owner order on a queue with children');
DELETE FROM tide.queues WHERE name = 'o1';

-- ---- at most 8 levels
SELECT lives_ok($$INSERT INTO tide.queues (name, parent) VALUES ('c4', 'c3'), ('c5', 'c4'), ('c6', 'c5'), ('c7', 'c6'), ('c8', 'c7')$$,
                'a chain of 8 levels');
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('c9', 'c8')$$,
                 '54000', 'queue "c9" would be 9 levels deep, at most 8 are supported', 'a ninth level');
INSERT INTO tide.queues (name) VALUES ('d1');
INSERT INTO tide.queues (name, parent) VALUES ('d2', 'd1');
SELECT throws_ok($$UPDATE tide.queues SET parent = 'c7' WHERE name = 'd1'$$,
                 '54000', 'queue "d2" would be 9 levels deep, at most 8 are supported',
                 'a subtree moved too deep: its deepest queue is named');
SELECT lives_ok($$UPDATE tide.queues SET parent = 'c6' WHERE name = 'd1'$$, 'the same subtree one level higher');

-- ---- one resource group per tree
SELECT throws_ok($$UPDATE tide.queues SET resource_group = 'g2' WHERE name = 'b1'$$,
                 '23514', 'queue "b1" is in resource group "g2" but its parent "B" is in "default"', 'a child moved to another group');
SELECT throws_ok($$UPDATE tide.queues SET resource_group = 'g2' WHERE name = 'B'$$,
                 '23514', 'queue "b1" is in resource group "default" but its parent "B" is in "g2"', 'a parent moved without its children');
SELECT lives_ok($$UPDATE tide.queues SET resource_group = 'g2' WHERE name IN ('B', 'b1')$$, 'a subtree moved in one statement');
SELECT is((SELECT array_agg(resource_group ORDER BY name) FROM tide.queues WHERE name IN ('B', 'b1')), ARRAY['g2', 'g2'],
          'both are in g2');
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('b2', 'B')$$,
                 '23514', 'queue "b2" is in resource group "default" but its parent "B" is in "g2"', 'a new child in another group');
UPDATE tide.queues SET resource_group = 'default' WHERE name IN ('B', 'b1');

-- ---- quotas are carved
SELECT throws_ok($$UPDATE tide.queues SET quota = 'gpu=6' WHERE name = 'a1'$$,
                 '23514', 'quotas of the children of queue "A" add up to gpu=11, more than its quota gpu=10', 'a child''s quota raised past its parent''s');
SELECT throws_ok($$UPDATE tide.queues SET quota = 'gpu=9' WHERE name = 'A'$$,
                 '23514', 'quotas of the children of queue "A" add up to gpu=10, more than its quota gpu=9', 'a parent''s quota lowered under its children''s');
SELECT throws_ok($$INSERT INTO tide.queues (name, parent, quota) VALUES ('a3', 'A', 'gpu=1')$$,
                 '23514', 'quotas of the children of queue "A" add up to gpu=11, more than its quota gpu=10', 'a new child with too much');
SELECT throws_ok($$UPDATE tide.queues SET parent = 'A' WHERE name = 'b1'$$,
                 '23514', 'quotas of the children of queue "A" add up to gpu=15, more than its quota gpu=10', 'a child moved under a full parent');
SELECT lives_ok($$UPDATE tide.queues SET quota = CASE name WHEN 'a1' THEN 'gpu=6' ELSE 'gpu=4' END::tide.resvec WHERE name IN ('a1', 'a2')$$,
                'quota moved between siblings in one statement');
SELECT lives_ok($$UPDATE tide.queues SET quota = 'gpu=6, cpu=64' WHERE name = 'a1'$$,
                'a child may name a resource its parent''s quota does not');
SELECT lives_ok($$INSERT INTO tide.queues (name, parent) VALUES ('a3', 'A')$$, 'a child without a quota under a full parent');
INSERT INTO tide.queues (name) VALUES ('E');
SELECT throws_ok($$INSERT INTO tide.queues (name, parent, quota) VALUES ('e1', 'E', 'gpu=1')$$,
                 '23514', 'queue "e1" has a quota but its parent "E" has none', 'a child''s quota under a parent without one');
SELECT throws_ok($$UPDATE tide.queues SET quota = NULL WHERE name = 'A'$$,
                 '23514', 'queue "a1" has a quota but its parent "A" has none', 'a parent''s quota taken away under its children''s');
SET LOCAL row_security = off;
SELECT lives_ok($$INSERT INTO tide.queues (name, parent, quota) VALUES ('r1', 'A', 'gpu=50')$$,
                'a restore (row_security off) writes the rows as dumped: no tree check stops it');
RESET row_security;
DELETE FROM tide.queues WHERE name = 'r1';

-- ---- jobs live in leaves
SELECT tide.submit('a1', 'gpu=2', name => 'run') AS run \gset
SELECT tide.submit('a1', 'gpu=1', name => 'wait') AS wait \gset
SELECT throws_ok($$INSERT INTO tide.queues (name, parent) VALUES ('a11', 'a1')$$,
                 '55000', 'queue "a1" has jobs and cannot have child queues', 'a child for a queue with jobs');
INSERT INTO tide.queues (name) VALUES ('f1');
SELECT throws_ok($$UPDATE tide.queues SET parent = 'a1' WHERE name = 'f1'$$,
                 '55000', 'queue "a1" has jobs and cannot have child queues', 'a queue moved under one with jobs');
SELECT throws_ok($$SELECT tide.submit('A', 'gpu=1')$$,
                 '42809', 'queue "A" has child queues: submit to one of them (a1, a2, a3)', 'tide.submit to an inner queue');
SELECT throws_ok($$SELECT tide.submit_array('A', 'gpu=1', 3)$$,
                 '42809', 'queue "A" has child queues: submit to one of them (a1, a2, a3)', 'tide.submit_array to an inner queue');
SELECT throws_ok($$SELECT tide.submit_many('A', ARRAY['gpu=1', 'gpu=2']::tide.resvec[])$$,
                 '42809', 'queue "A" has child queues: submit to one of them (a1, a2, a3)', 'tide.submit_many to an inner queue');
SELECT throws_ok($$INSERT INTO tide.jobs (queue) VALUES ('A')$$,
                 '42809', 'queue "A" has child queues: submit to one of them (a1, a2, a3)', 'a plain INSERT into an inner queue');
SELECT throws_ok(format($$UPDATE tide.jobs SET queue = 'A' WHERE id = %s$$, :wait),
                 '42809', format('queue "A" has child queues: move job %s to one of them (a1, a2, a3)', :wait), 'a job moved into an inner queue');
SELECT tide.submit('q1', 'cpu=1') AS ended \gset
SELECT tide.cancel(:ended) AS cancelled \gset
SELECT lives_ok($$INSERT INTO tide.queues (name, parent) VALUES ('q1x', 'q1')$$,
                'a queue whose jobs have all ended may get children');
DELETE FROM tide.queues WHERE name = 'q1x';

-- ---- a parent is not deleted while it has children
SELECT throws_ok($$DELETE FROM tide.queues WHERE name = 'B'$$,
                 '23503', 'queue "B" has child queues b1', 'deleting a parent');
SELECT throws_ok($$DELETE FROM tide.queues WHERE name IN ('A', 'a2', 'a3')$$,
                 '23503', 'queue "A" has child queues a1', 'deleting a parent and some of its children');
SELECT lives_ok($$DELETE FROM tide.queues WHERE name IN ('b1', 'B')$$, 'a whole subtree in one statement');
SELECT is((SELECT count(*)::int FROM tide.queues WHERE name IN ('B', 'b1')), 0, 'it is gone');
INSERT INTO tide.queues (name, quota) VALUES ('B', 'gpu=10');
INSERT INTO tide.queues (name, parent, quota) VALUES ('b1', 'B', 'gpu=5');

-- ---- moving a leaf with running work: every job, allocation and state stays
SELECT pg_temp.place(:run, ARRAY['n1']);
SELECT tide.started(id) FROM tide.allocations WHERE job_id = :run;
CREATE TEMP TABLE before_move AS
SELECT j.id, j.queue, j.state, j.queue_held, j.pending_reason, a.id AS alloc, a.state AS alloc_state, a.node, a.gpus, a.resources
  FROM tide.jobs j LEFT JOIN tide.allocations a ON a.job_id = j.id;
SELECT is((SELECT state FROM tide.jobs WHERE id = :run), 'running', 'a1 has a running job');
SELECT lives_ok($$UPDATE tide.queues SET parent = 'B', quota = 'gpu=5' WHERE name = 'a1'$$, 'a1 moved under B with its jobs');
SELECT set_eq($$SELECT j.id, j.queue, j.state, j.queue_held, j.pending_reason, a.id AS alloc, a.state AS alloc_state, a.node, a.gpus, a.resources
                  FROM tide.jobs j LEFT JOIN tide.allocations a ON a.job_id = j.id$$,
              'SELECT * FROM before_move', 'its jobs, allocations and states are unchanged');
SELECT results_eq($$SELECT parent, usage::text FROM tide.queue_usage WHERE queue = 'a1'$$,
                  $$VALUES ('B'::text, 'gpu=2')$$, 'tide.queue_usage: its new parent, the same usage');
SELECT is((SELECT usage::text FROM tide.fair_share WHERE queue = 'B'), 'gpu=2', 'tide.fair_share: its usage counts in B''s subtree now');
SELECT is((SELECT usage::text FROM tide.fair_share WHERE queue = 'A'), '', 'and no longer in A''s');

-- ---- renames cascade to the children, jobs follow their queue
SELECT lives_ok($$UPDATE tide.queues SET name = 'Borg' WHERE name = 'B'$$, 'a parent renamed');
SELECT is((SELECT array_agg(name ORDER BY name) FROM tide.queues WHERE parent = 'Borg'), ARRAY['a1', 'b1'], 'its children follow');
SELECT lives_ok($$UPDATE tide.queues SET name = 'a1x' WHERE name = 'a1'$$, 'a leaf with jobs renamed');
SELECT results_eq(format('SELECT queue, state FROM tide.jobs WHERE id IN (%s, %s) ORDER BY id', :run, :wait),
                  $$VALUES ('a1x'::text, 'running'::text), ('a1x', 'pending')$$, 'its jobs follow, states unchanged');
SELECT is((SELECT parent FROM tide.queues WHERE name = 'a1x'), 'Borg', 'and it keeps its parent');

-- ---- holding an inner queue holds its subtree
SELECT tide.submit('b1', 'gpu=1') AS b1job \gset
SELECT tide.hold_queue('Borg');
SELECT results_eq(format('SELECT id, state, queue_held, pending_reason FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :run, :wait, :b1job),
                  format($$VALUES (%s::bigint, 'running'::text, true, NULL::text), (%s, 'pending', true, 'queue Borg is held'), (%s, 'pending', true, 'queue Borg is held')$$,
                         :run, :wait, :b1job),
                  'every job below it is marked; the pending ones wait naming it');
SELECT is((SELECT count(*)::int FROM tide.allocations WHERE job_id = :run AND state = 'running'), 1, 'running work is untouched');
SELECT tide.submit('b1', 'gpu=1') AS late \gset
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :late),
                  $$VALUES (true, 'queue Borg is held')$$, 'a job submitted below it waits');
SELECT is((SELECT count(*)::int FROM tide.dry_run() WHERE job_id IN (:wait, :b1job, :late) AND kind = 'place'), 0,
          'the dry run places none of them');
SELECT tide.submit('a2', 'gpu=1') AS a2job \gset
UPDATE tide.queues SET parent = 'Borg', quota = NULL WHERE name = 'a2';
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :a2job),
                  $$VALUES (true, 'queue Borg is held')$$, 'a leaf moved under the held parent: its pending job waits');
UPDATE tide.queues SET parent = 'A' WHERE name = 'a2';
SELECT results_eq(format('SELECT waiting, pending_reason FROM tide.jobs WHERE id = %s', :a2job),
                  $$VALUES (false, NULL::text)$$, 'moved out again: considered again');
SELECT tide.hold_queue('b1');
SELECT tide.release_queue('Borg');
SELECT results_eq(format('SELECT id, waiting, pending_reason FROM tide.jobs WHERE id IN (%s, %s, %s) ORDER BY id', :wait, :b1job, :late),
                  format($$VALUES (%s::bigint, false, NULL::text), (%s, true, 'queue b1 is held'), (%s, true, 'queue b1 is held')$$,
                         :wait, :b1job, :late),
                  'the parent released: a child held itself stays held, naming itself');
SELECT is((SELECT array_agg(name || '=' || coalesce(held_by, '-') ORDER BY name) FROM tide.queues WHERE name IN ('Borg', 'a1x', 'b1')),
          ARRAY['Borg=-', 'a1x=-', 'b1=b1'], 'held_by names the queue whose hold applies');
SELECT lives_ok($$UPDATE tide.queues SET held_by = 'Borg' WHERE name = 'a1x'$$, 'held_by written by hand ...');
SELECT is((SELECT held_by FROM tide.queues WHERE name = 'a1x'), NULL, '... is put back');

-- ---- the views
SELECT is((SELECT column_name::text FROM information_schema.columns
            WHERE table_schema = 'tide' AND table_name = 'queue_usage' ORDER BY ordinal_position DESC LIMIT 1),
          'parent', 'tide.queue_usage: parent is the last column');
SELECT results_eq($$SELECT queue, parent, depth, rank_among_siblings FROM tide.fair_share WHERE queue IN ('A', 'a2', 'a3', 'Borg', 'a1x', 'b1', 'c1', 'c8') ORDER BY queue$$,
                  $$VALUES ('A'::text, NULL::text, 1, 3::bigint), ('Borg', NULL, 1, 4), ('a1x', 'Borg', 2, 2), ('a2', 'A', 2, 1), ('a3', 'A', 2, 2),
                           ('b1', 'Borg', 2, 1), ('c1', NULL, 1, 6), ('c8', 'c7', 8, 1)$$,
                  'tide.fair_share: parent, depth, rank among siblings (priority, share, name)');
SELECT is((SELECT array_agg(queue ORDER BY rank_in_group) FROM tide.fair_share WHERE resource_group = 'default' AND queue IN ('A', 'a2', 'a3', 'Borg', 'a1x', 'b1')),
          ARRAY['A', 'a2', 'a3', 'Borg', 'b1', 'a1x'], 'rank_in_group: the group''s order, a parent before its children');
SELECT is((SELECT share FROM tide.fair_share WHERE queue = 'Borg'), 0.2, 'an inner queue''s share: its subtree''s usage over its quota');
SELECT is((SELECT share FROM tide.fair_share WHERE queue = 'a3'), NULL,
          'a leaf without a quota has no share: it comes after its siblings with one (R-O4)');
SET LOCAL tide.fair_share_half_life = '1d';
-- the averages as the cycle keeps them: one row per queue with a quota,
-- an inner queue's of its subtree's usage (here just written)
INSERT INTO tide.queue_fair_usage (queue, decayed, updated_at)
VALUES ('b1', '{"gpu": 4}', now()), ('a1x', '{"gpu": 2}', now()), ('Borg', '{"gpu": 6}', now());
SELECT results_eq($$SELECT queue, decayed, share FROM tide.fair_share WHERE queue IN ('Borg', 'a1x', 'b1') ORDER BY queue$$,
                  $$VALUES ('Borg'::text, '{"gpu": 6}'::jsonb, 0.6), ('a1x', '{"gpu": 2}', 0.4), ('b1', '{"gpu": 4}', 0.8)$$,
                  'with a half-life: every queue''s share is of its own kept average, an inner queue''s too');
RESET tide.fair_share_half_life;

SELECT * FROM finish();
ROLLBACK;
