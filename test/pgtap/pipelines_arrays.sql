-- R-P5: arrays.  At most max_running members in play; the rest wait and
-- are let in by index as members end; cancel_array; retries of members.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(24);

SELECT tide.submit_array('q1', 'gpu=1', 5, 2, command => 'train', name => 'sweep') AS arr \gset
SELECT results_eq(format('SELECT array_index, array_throttled, waiting, pending_reason FROM tide.jobs WHERE array_id = %s ORDER BY id', :arr),
                  format($$VALUES (0, false, false, NULL::text), (1, false, false, NULL),
                                  (2, true, true, 'array %s runs at most 2 at a time'),
                                  (3, true, true, 'array %s runs at most 2 at a time'),
                                  (4, true, true, 'array %s runs at most 2 at a time')$$, :arr, :arr, :arr),
                  'members 0..4, ids in index order; beyond max_running they wait, saying so');
SELECT results_eq(format('SELECT queue, size, max_running FROM tide.job_arrays WHERE id = %s', :arr),
                  $$VALUES ('q1', 5, 2)$$, 'the array row');
SELECT is((SELECT count(*)::int FROM tide.job_events e JOIN tide.jobs j ON j.id = e.job_id WHERE j.array_id = :arr AND e.new_state = 'pending'),
          5, 'each member''s submission is in the history');
SELECT is((SELECT count(*)::int FROM tide.job_tasks t JOIN tide.jobs j ON j.id = t.job_id WHERE j.array_id = :arr AND t.request::text = 'gpu=1'),
          5, 'each member has its task');
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE array_id = :arr AND state = 'allocated'), 2, 'two placed, though room for all');
SELECT is((SELECT jobs_considered FROM tide.cycles ORDER BY id DESC LIMIT 1), 2, 'the cycle considered only the two in play');
SELECT (SELECT id FROM tide.jobs WHERE array_id = :arr AND array_index = 0) AS m0,
       (SELECT id FROM tide.jobs WHERE array_id = :arr AND array_index = 1) AS m1,
       (SELECT id FROM tide.jobs WHERE array_id = :arr AND array_index = 2) AS m2,
       (SELECT id FROM tide.jobs WHERE array_id = :arr AND array_index = 3) AS m3 \gset
SELECT tide.exited((pg_temp.allocs(:m0))[1], 0);
SELECT results_eq(format('SELECT array_index, array_throttled, pending_reason FROM tide.jobs WHERE array_id = %s AND state = ''pending'' ORDER BY id', :arr),
                  format($$VALUES (2, false, NULL::text), (3, true, 'array %s runs at most 2 at a time'), (4, true, 'array %s runs at most 2 at a time')$$, :arr, :arr),
                  'a member ended: the lowest index waiting is let in');
SELECT tide.hold(:m2);
SELECT ok(tide.run_cycle() IS NOT NULL, 'a cycle');
SELECT results_eq(format('SELECT state, pending_reason FROM tide.jobs WHERE id = %s', :m2),
                  $$VALUES ('pending', 'held')$$, 'a held member keeps its slot and waits held');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE array_id = :arr AND array_throttled), 2, 'no other member let in meanwhile');
SELECT tide.release(:m2);
SELECT tide.cancel(:m1);
SELECT tide.evicted(a) FROM unnest(pg_temp.allocs(:m1)) a;
SELECT results_eq(format('SELECT array_index FROM tide.jobs WHERE array_id = %s AND NOT array_throttled AND state NOT IN (''succeeded'', ''failed'', ''cancelled'') ORDER BY 1', :arr),
                  $$VALUES (2), (3)$$, 'a cancelled member frees its slot too');
SELECT is(tide.explain(:m3 + 1) -> 'blocking' -> 0 ->> 'rule', 'R-P5', 'explain: throttled, rule R-P5');

-- a retry of a member is a member, taking a free slot or waiting for one
SELECT tide.submit_array('q1', 'gpu=1', 3, 1, max_retries => 1) AS ar2 \gset
SELECT (SELECT id FROM tide.jobs WHERE array_id = :ar2 AND array_index = 0) AS r0 \gset
SELECT pg_temp.place(:r0, ARRAY['n2']);
SELECT tide.exited((pg_temp.allocs(:r0))[1], 1);
SELECT results_eq(format('SELECT count(*)::int FROM tide.jobs WHERE array_id = %s AND NOT array_throttled AND state IN (''pending'', ''allocated'', ''running'')', :ar2),
                  $$VALUES (1)$$, 'after a member failed with retries left, still one in play');

-- cancel_array
SELECT is(tide.cancel_array(:arr), 3, 'cancel_array asks the members not ended');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE array_id = :arr AND state = 'pending'), 0, 'no member is left pending');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE array_id = :arr AND state = 'cancelled'), 4,
          'pending and throttled members cancelled at once (and the one cancelled before)');
SELECT throws_ok('SELECT tide.cancel_array(987654321)', '42704', 'array 987654321 does not exist', 'an unknown array');

-- arguments
SELECT throws_ok($$SELECT tide.submit_array('q1', 'gpu=1', 0)$$, '22023', 'size must be at least 1, not 0', 'size 0');
SELECT throws_ok($$SELECT tide.submit_array('q1', 'gpu=1', 1000001)$$, '54000',
                 'size 1000001 is above the limit of 1000000 members of an array', 'size above the limit');
SELECT throws_ok($$SELECT tide.submit_array('q1', 'gpu=1', 3, 0)$$, '22023', 'max_running must be at least 1, not 0', 'max_running 0');
SELECT tide.submit_array('q1', 'cpu=1', 100000) AS big \gset
SELECT results_eq(format('SELECT count(*)::int, min(array_index), max(array_index) FROM tide.jobs WHERE array_id = %s', :big),
                  $$VALUES (100000, 0, 99999)$$, 'an array of 100,000 in one call');

-- tenants
SET LOCAL ROLE tap_alice;
SELECT tide.submit_array('q1', 'gpu=1', 2) AS alice_arr \gset
SELECT is((SELECT count(*)::int FROM tide.job_arrays), 1, 'a submitter sees its own arrays only');
RESET ROLE;
SET LOCAL ROLE tap_bob;
SELECT throws_ok(format('SELECT tide.cancel_array(%s)', :alice_arr), '42704', format('array %s does not exist', :alice_arr),
                 'another owner''s array: as missing');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
