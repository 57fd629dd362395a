-- Per-owner limits (R-A4) through tide.run_cycle(): tide.queues.owner_capability
-- bounds what one owner's jobs hold in a queue, for guaranteed, borrowing and
-- idle jobs alike; the pending reason and tide.explain name the limit; a
-- minimum above it alone is unschedulable (R-A2); evictions never take an
-- owner past it; bad values are refused with clear errors.  Launchers are
-- simulated in SQL; owners are set on the rows (they need not be roles).
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(35);

CREATE FUNCTION pg_temp.reset() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tide.allocations SET state = 'released', released_at = now(), release_reason = 'test'
     WHERE state <> 'released';
    DELETE FROM tide.jobs;
    DELETE FROM tide.nodes;
    DELETE FROM tide.queues;
    PERFORM tide.register_node('n1', 'cpu=32, gpu=8');
    PERFORM tide.register_node('n2', 'cpu=32, gpu=8');
END $$;

-- n jobs of owner in queue, each asking req; their ids.
CREATE FUNCTION pg_temp.sub(who text, q text, req text, n int DEFAULT 1, idle boolean DEFAULT false,
                            replicas int DEFAULT 1, prio int DEFAULT 0, preemptable boolean DEFAULT true)
    RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[] := '{}';
    jid bigint;
BEGIN
    FOR i IN 1 .. n LOOP
        jid := tide.submit(q, req::tide.resvec, replicas => replicas, priority => prio, idle => idle,
                           preemptable => preemptable);
        UPDATE tide.jobs x SET owner = who WHERE x.id = jid;
        ids := ids || jid;
    END LOOP;
    RETURN ids;
END $$;

CREATE FUNCTION pg_temp.start_all() RETURNS void LANGUAGE sql AS $$
    SELECT count(tide.started(a.id)) FROM tide.allocations a WHERE a.state = 'assigned';
$$;

-- GPUs an owner's live allocations hold in a queue
CREATE FUNCTION pg_temp.holds(who text, q text) RETURNS numeric LANGUAGE sql AS $$
    SELECT coalesce(sum(tide.get(a.resources, 'gpu')), 0)
      FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
     WHERE a.state <> 'released' AND j.owner = who AND j.queue = q;
$$;
CREATE FUNCTION pg_temp.jstate(job bigint) RETURNS text
    LANGUAGE sql AS $$ SELECT state FROM tide.jobs WHERE id = job $$;
CREATE FUNCTION pg_temp.n_state(ids bigint[], st text) RETURNS int LANGUAGE sql AS $$
    SELECT count(*)::int FROM tide.jobs WHERE id = ANY (ids) AND state = st;
$$;
CREATE FUNCTION pg_temp.err(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s text;
    m text;
    h text;
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
    RETURN rtrim(s || ' | ' || m || ' | ' || coalesce(h, ''), ' |');
END $$;

-- ---------------------------------------------------------------- schema
SELECT has_column('tide', 'queues', 'owner_capability', 'tide.queues.owner_capability exists');
SELECT col_type_is('tide', 'queues', 'owner_capability', 'tide.resvec', 'owner_capability is a resvec');
SELECT col_is_null('tide', 'queues', 'owner_capability', 'owner_capability may be NULL (no limit)');

-- ---------------------------------------------------------------- guaranteed jobs
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, owner_capability) VALUES ('a1', 'gpu=16', 'gpu=8');
CREATE TEMP TABLE g AS SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 5) AS alice,
                              pg_temp.sub('bob', 'a1', 'cpu=1, gpu=2', 1) AS bob;
SELECT tide.run_cycle();
SELECT is(pg_temp.n_state((SELECT alice FROM g), 'allocated'), 4, 'R-A4 guaranteed: alice gets 4 jobs of 2 GPUs under her limit of 8');
SELECT is(pg_temp.holds('alice', 'a1'), 8::numeric, 'R-A4 guaranteed: alice holds exactly her limit');
SELECT is(pg_temp.n_state((SELECT bob FROM g), 'allocated'), 1, 'R-A4: another owner is not held back by alice''s limit');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = (SELECT alice[5] FROM g)),
          'owner limit of queue a1 is gpu=8; alice holds 8, the job needs 2',
          'R-A4: the pending reason names the queue, the limit, the owner and the numbers');
SELECT is((SELECT pending_reason FROM tide.pending WHERE job_id = (SELECT alice[5] FROM g)),
          'owner limit of queue a1 is gpu=8; alice holds 8, the job needs 2',
          'R-A4: tide.pending shows the reason');
SELECT is((SELECT count(*)::int FROM jsonb_array_elements(tide.explain((SELECT alice[5] FROM g)) -> 'blocking') b
            WHERE b ->> 'rule' = 'R-A4' AND b ->> 'owner' = 'alice' AND (b ->> 'limit')::numeric = 8
              AND (b ->> 'used')::numeric = 8 AND (b ->> 'asked')::numeric = 2
              AND b ->> 'reason' = 'owner limit of queue a1 is gpu=8; alice holds 8, the job needs 2'),
          1, 'R-A4: tide.explain names the limit with its rule and numbers');
SELECT ok((SELECT b ->> 'unblock' FROM jsonb_array_elements(tide.explain((SELECT alice[5] FROM g)) -> 'blocking') b
            WHERE b ->> 'rule' = 'R-A4') LIKE '%alice%',
          'R-A4: explain says what unblocks it');
SELECT is((SELECT count(*)::int FROM jsonb_array_elements(tide.explain((SELECT alice[4] FROM g)) -> 'blocking') b
            WHERE b ->> 'rule' = 'R-A4'), 0, 'R-A4: explain of a placed job names no owner limit');
-- one of alice's jobs ends: the next one runs
SELECT pg_temp.start_all();
SELECT tide.exited(a.id, 0) FROM tide.allocations a WHERE a.job_id = (SELECT alice[1] FROM g);
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate((SELECT alice[5] FROM g)), 'allocated', 'R-A4: when one of her jobs ends, alice''s next job runs');
SELECT is(pg_temp.holds('alice', 'a1'), 8::numeric, 'R-A4: and she still holds no more than her limit');
-- raising the limit lets the queue's jobs in at the next cycle
SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 1);
SELECT tide.run_cycle();
SELECT is(pg_temp.holds('alice', 'a1'), 8::numeric, 'R-A4: a sixth job waits');
UPDATE tide.queues SET owner_capability = NULL WHERE name = 'a1';
SELECT tide.run_cycle();
SELECT is(pg_temp.holds('alice', 'a1'), 10::numeric, 'R-A4: with the limit removed it runs');

-- ---------------------------------------------------------------- borrowing jobs
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, owner_capability) VALUES ('a1', 'gpu=2', 'gpu=6');
CREATE TEMP TABLE b AS SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 4) AS alice;
SELECT tide.run_cycle();
SELECT is(pg_temp.n_state((SELECT alice FROM b), 'allocated'), 3, 'R-A4 borrowing: one guaranteed and two borrowing jobs, no more');
SELECT is(pg_temp.holds('alice', 'a1'), 6::numeric, 'R-A4 borrowing: the limit binds above quota too');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = (SELECT alice[4] FROM b)),
          'owner limit of queue a1 is gpu=6; alice holds 6, the job needs 2',
          'R-A4 borrowing: the reason names the owner limit');

-- ---------------------------------------------------------------- idle jobs
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, owner_capability) VALUES ('a1', 'gpu=16', 'gpu=4');
CREATE TEMP TABLE i AS SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 3, idle => true) AS alice;
SELECT tide.run_cycle();
SELECT is(pg_temp.n_state((SELECT alice FROM i), 'allocated'), 2, 'R-A4 idle: idle jobs count towards the limit');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = (SELECT alice[3] FROM i)),
          'owner limit of queue a1 is gpu=4; alice holds 4, the job needs 2',
          'R-A4 idle: the reason names the owner limit');
-- a guaranteed job of alice's does not evict her own idle jobs to pass her limit
SELECT pg_temp.start_all();
CREATE TEMP TABLE i2 AS SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 1) AS alice;
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate((SELECT alice[1] FROM i2)), 'pending', 'R-A4: a guaranteed job over the limit waits');
SELECT is((SELECT count(*)::int FROM tide.evictions), 0, 'R-A4: it evicts nothing (idle jobs count towards the limit)');
SELECT is(pg_temp.holds('alice', 'a1'), 4::numeric, 'R-A4 idle: alice still holds 4');

-- ---------------------------------------------------------------- a minimum above the limit (R-A2)
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, owner_capability) VALUES ('a1', 'gpu=16', 'gpu=8');
CREATE TEMP TABLE u AS SELECT pg_temp.sub('alice', 'a1', 'cpu=1, gpu=2', 1, replicas => 5) AS alice;
SELECT tide.run_cycle();
SELECT is((SELECT unschedulable FROM tide.jobs WHERE id = (SELECT alice[1] FROM u)), true,
          'R-A4, R-A2: a gang minimum above the owner limit is unschedulable');
SELECT is((SELECT pending_reason FROM tide.jobs WHERE id = (SELECT alice[1] FROM u)),
          'owner limit of queue a1 is gpu=8, the job needs 10',
          'R-A4, R-A2: the reason names the limit and the minimum');

-- ---------------------------------------------------------------- evictions never go over
-- lo (no quota) fills the cluster with preemptable jobs; alice's guaranteed
-- jobs in hi reclaim (R-E1), but only as much as her limit allows
SELECT pg_temp.reset();
INSERT INTO tide.queues (name, quota, owner_capability) VALUES ('hi', 'gpu=16', 'gpu=8');
INSERT INTO tide.queues (name) VALUES ('lo');
CREATE TEMP TABLE e AS SELECT pg_temp.sub('carol', 'lo', 'cpu=1, gpu=2', 8) AS carol;
SELECT tide.run_cycle();
SELECT pg_temp.start_all();
SELECT is(pg_temp.n_state((SELECT carol FROM e), 'running'), 8, 'eviction setup: lo fills both nodes');
CREATE TEMP TABLE e2 AS SELECT pg_temp.sub('alice', 'hi', 'cpu=1, gpu=2', 6) AS alice;
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.evictions), 4,
          'R-A4, R-E1: alice''s jobs evict for 4 of them only (her limit is 8 GPUs)');
SELECT is((SELECT count(DISTINCT preemptor_job_id)::int FROM tide.evictions
            WHERE preemptor_job_id IN (SELECT unnest(alice[5:6]) FROM e2)), 0,
          'R-A4: the jobs over her limit evict nobody');
-- the launchers stop the victims; the next cycle places alice's jobs
SELECT tide.evicted(a.id) FROM tide.allocations a WHERE a.state = 'releasing';
SELECT tide.run_cycle();
SELECT is(pg_temp.holds('alice', 'hi'), 8::numeric, 'R-A4: after the evictions alice holds her limit, no more');
SELECT is((SELECT count(*)::int FROM tide.jobs WHERE id IN (SELECT unnest(alice) FROM e2)
              AND pending_reason LIKE 'owner limit of queue hi is gpu=8; alice holds 8%'), 2,
          'R-A4: her two other jobs wait for her limit');
SELECT tide.run_cycle();
SELECT is((SELECT count(*)::int FROM tide.evictions), 4, 'R-A4: later cycles evict nobody more for them');

-- ---------------------------------------------------------------- bad values
SELECT is(pg_temp.err($$INSERT INTO tide.queues (name, owner_capability) VALUES ('bad', '')$$),
          '22023 | owner_capability of queue "bad" names no resource | Name what one owner may hold, above 0, e.g. ''gpu=8''; NULL means no owner limit.',
          'an empty owner_capability is refused with a hint');
SELECT is(pg_temp.err($$UPDATE tide.queues SET owner_capability = 'gpu=0' WHERE name = 'hi'$$),
          '22023 | owner_capability of queue "hi" names no resource | Name what one owner may hold, above 0, e.g. ''gpu=8''; NULL means no owner limit.',
          'a zero owner_capability names nothing and is refused with a hint');
SELECT ok(pg_temp.err($$UPDATE tide.queues SET owner_capability = 'gpu=-2' WHERE name = 'hi'$$) LIKE '22P02 | %',
          'a negative owner_capability is refused by tide.resvec');
SELECT ok(pg_temp.err($$UPDATE tide.queues SET owner_capability = 'gpu=4, H100=2' WHERE name = 'hi'$$) = 'no error',
          'a limit on a card type is accepted');

SELECT * FROM finish();
ROLLBACK;
