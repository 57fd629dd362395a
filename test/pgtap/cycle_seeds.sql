-- Seed 000 through tide.run_cycle(), with the seed's names and numbers:
-- the ordering table (R-O1, R-O2), small job first (R-L1), the
-- reservation timeline A/B/C/D (R-L2), the retry lane (R-O3).
-- A "filler" job of the highest priority stands for the rest of the
-- queue's load: each step releases the old filler and submits one sized so
-- that the free resources are what the seed says.
BEGIN;
CREATE EXTENSION pg_tide;
SET client_min_messages = warning;
SELECT plan(30);
-- (retries are placed at once here; their backoff, R-T5, is run_backoff.sql's)
SET LOCAL tide.retry_backoff = 0;

CREATE FUNCTION pg_temp.jstate(job_name text) RETURNS text LANGUAGE sql AS
    $$ SELECT state FROM tide.jobs WHERE name = job_name AND state <> 'failed' ORDER BY id DESC LIMIT 1 $$;
CREATE FUNCTION pg_temp.reason(job_name text) RETURNS text LANGUAGE sql AS
    $$ SELECT pending_reason FROM tide.jobs WHERE name = job_name ORDER BY id DESC LIMIT 1 $$;
CREATE FUNCTION pg_temp.jid(job_name text) RETURNS bigint LANGUAGE sql AS
    $$ SELECT id FROM tide.jobs WHERE name = job_name ORDER BY id DESC LIMIT 1 $$;
-- End every live allocation of the named job (its process exited 0).
CREATE FUNCTION pg_temp.finish(job_name text) RETURNS void LANGUAGE sql AS $$
    SELECT tide.exited(a.id, 0) FROM tide.allocations a
     WHERE a.job_id = pg_temp.jid(job_name) AND a.state <> 'released' $$;
-- The queue's free resources become what is left beside the filler.
CREATE FUNCTION pg_temp.filler(req tide.resvec) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.finish('filler');
    PERFORM tide.submit('q', req, priority => 1000, name => 'filler');
END $$;
CREATE FUNCTION pg_temp.at(job_name text, hhmm text) RETURNS void LANGUAGE sql AS
    $$ UPDATE tide.jobs SET created_at = ('2026-01-01 ' || hhmm || '+00')::timestamptz WHERE name = job_name $$;

-- ---------------------------------------------------------------- ordering table
INSERT INTO tide.queues (name) VALUES ('q');
SELECT tide.register_node('n1', 'cpu=1, memory=2Gi');
SELECT tide.submit('q', 'cpu=1', priority => 9, name => 'A');
SELECT tide.submit('q', 'cpu=1', priority => 9, name => 'B');
SELECT tide.submit('q', 'cpu=1', priority => 2, name => 'C');
SELECT tide.submit('q', 'cpu=1', priority => 4, name => 'D', idle => true);
SELECT tide.submit('q', 'cpu=1', priority => 4, name => 'E', idle => true);
SELECT tide.submit('q', 'cpu=1', priority => 2, name => 'F', idle => true);
SELECT pg_temp.at('A', '10:00'), pg_temp.at('B', '11:00'), pg_temp.at('C', '10:00'),
       pg_temp.at('D', '10:00'), pg_temp.at('E', '11:00'), pg_temp.at('F', '10:00');
-- one slot: each cycle places the next job in order; it then finishes
CREATE TEMP TABLE placed_order (n serial, name text);
DO $$
BEGIN
    FOR i IN 1..6 LOOP
        PERFORM tide.run_cycle();
        INSERT INTO placed_order (name)
        SELECT name FROM tide.jobs WHERE state = 'allocated' ORDER BY id;
        PERFORM pg_temp.finish(name) FROM tide.jobs WHERE state = 'allocated';
    END LOOP;
END $$;
SELECT is((SELECT string_agg(name, ' ' ORDER BY n) FROM placed_order), 'A B C D E F',
          'R-O1/R-O2 seed 000 table: A9/10h, B9/11h, C2/10h, then idle D4/10h, E4/11h, F2/10h');
SELECT is((SELECT count(*)::int FROM tide.cycles), 6, 'six cycles, six rows in tide.cycles');
SELECT ok((SELECT bool_and(cycle_id IS NOT NULL) FROM tide.job_events WHERE new_state = 'allocated'),
          'R-C2: every placement event names its cycle');
DELETE FROM tide.jobs;

-- ---------------------------------------------------------------- small job first
UPDATE tide.nodes SET capacity = 'cpu=8, memory=16Gi' WHERE name = 'n1';
SELECT pg_temp.filler('cpu=7, memory=14Gi');
SELECT tide.submit('q', 'cpu=8, memory=16Gi', name => 'A');
SELECT tide.submit('q', 'cpu=4, memory=8Gi', name => 'B');
SELECT pg_temp.at('A', '10:00'), pg_temp.at('B', '10:01');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate('A') || ' ' || pg_temp.jstate('B'), 'pending pending', '10:00 queue free 1c2g: A and B wait');
SELECT pg_temp.filler('cpu=4, memory=8Gi');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate('B'), 'allocated', '11:00 free 4c8g: B (4c8g) runs before the earlier A (R-L1)');
SELECT is(pg_temp.jstate('A'), 'pending', '11:00: A (8c16g) keeps waiting');
SELECT is(pg_temp.reason('A'), 'no ready node has room for cpu=8, memory=16Gi (1 node: short of cpu on 1, memory on 1)',
          'R-C2: A''s pending reason names the shortage with numbers');
SELECT pg_temp.finish('B');
DELETE FROM tide.jobs WHERE name <> 'filler';

-- ---------------------------------------------------------------- reservation timeline
-- 10:00 queue free 0; A 4c8g prio 6, B 1c2g prio 4, C 2c4g prio 4, D 1c2g prio 2
SELECT pg_temp.filler('cpu=8, memory=16Gi');
SELECT tide.submit('q', 'cpu=4, memory=8Gi', priority => 6, name => 'A');
SELECT tide.submit('q', 'cpu=1, memory=2Gi', priority => 4, name => 'B');
SELECT tide.submit('q', 'cpu=2, memory=4Gi', priority => 4, name => 'C');
SELECT tide.submit('q', 'cpu=1, memory=2Gi', priority => 2, name => 'D');
SELECT pg_temp.at(n, '10:00') FROM unnest(ARRAY['A', 'B', 'C', 'D']) n;
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM tide.jobs WHERE name <> 'filler'),
          'A=pending B=pending C=pending D=pending', '10:00 free 0: A, B, C, D wait');

-- 11:00 free 1c2g: A cannot fit, B (prio 4) is placed
SELECT pg_temp.filler('cpu=7, memory=14Gi');
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM tide.jobs WHERE name <> 'filler'),
          'A=pending B=allocated C=pending D=pending', '11:00 free 1c2g: lower-priority B is placed, A C D wait');

-- 11:05 A reserves; free 0
UPDATE tide.jobs SET reserve = true WHERE name = 'A';
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM tide.jobs WHERE name IN ('A', 'C', 'D')),
          'A=pending C=pending D=pending', '11:05 A reserves: A, C, D wait');

-- 11:10 free 2c4g: held for A; C (2c4g) must not take it
SELECT pg_temp.filler('cpu=5, memory=10Gi');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate('C'), 'pending', '11:10 free 2c4g: C is not placed (R-L2)');
SELECT is(pg_temp.reason('C'), format('held for job %s (1 node)', pg_temp.jid('A')),
          '11:10: C''s reason: held for job A');
SELECT is(pg_temp.jstate('D'), 'pending', '11:10: D waits too');
SELECT is((SELECT holds FROM tide.cycles ORDER BY id DESC LIMIT 1), 2,
          'the cycle row counts A''s holds (queue headroom and node n1)');

-- 11:15 free 4c8g: A finally starts
SELECT pg_temp.filler('cpu=3, memory=6Gi');
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM tide.jobs WHERE name IN ('A', 'C', 'D')),
          'A=allocated C=pending D=pending', '11:15 free 4c8g: A is placed; C and D wait');

-- 11:20 free 1c2g: utilisation first again: D (prio 2) runs, C (prio 4) waits
SELECT pg_temp.filler('cpu=2, memory=4Gi');
SELECT tide.run_cycle();
SELECT is((SELECT string_agg(name || '=' || state, ' ' ORDER BY name) FROM tide.jobs WHERE name IN ('C', 'D')),
          'C=pending D=allocated', '11:20 free 1c2g: D is placed ahead of C');
SELECT is(pg_temp.reason('C'), 'no ready node has room for cpu=2, memory=4Gi (1 node: short of cpu on 1, memory on 1)',
          '11:20: C''s reason is the shortage again');

-- EASY backfill: the filler has a time limit, so A's start is known; a job
-- that ends before it may use what A holds (R-L2, Slurm's EASY backfill).
SELECT pg_temp.finish(n) FROM unnest(ARRAY['A', 'B', 'D', 'filler']) n;
DELETE FROM tide.jobs WHERE name <> 'filler';
SELECT tide.submit('q', 'cpu=6, memory=12Gi', priority => 1000, name => 'filler', time_limit => '1 hour');
SELECT tide.submit('q', 'cpu=4, memory=8Gi', priority => 6, name => 'A', reserve => true);
SELECT tide.submit('q', 'cpu=2, memory=4Gi', priority => 4, name => 'C');
SELECT tide.submit('q', 'cpu=1, memory=2Gi', priority => 2, name => 'D', time_limit => '30 minutes');
SELECT tide.submit('q', 'cpu=1, memory=2Gi', priority => 1, name => 'G', time_limit => '2 hours');
SELECT tide.run_cycle();
UPDATE tide.allocations SET state = 'running', started_at = now()
 WHERE job_id = pg_temp.jid('filler') AND state = 'assigned';
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate('A'), 'pending', 'EASY: A (4c8g) cannot start beside the 6c12g filler');
SELECT is(pg_temp.jstate('C'), 'pending', 'EASY: C without a time limit may not use what A holds');
SELECT is(pg_temp.jstate('D'), 'allocated', 'EASY: D (30 minutes) ends before A can start (1 hour): backfilled');
SELECT is(pg_temp.jstate('G'), 'pending', 'EASY: G (2 hours) would delay A: waits');
SELECT pg_temp.finish(n) FROM unnest(ARRAY['D', 'filler']) n;
DELETE FROM tide.jobs;

-- ---------------------------------------------------------------- retry lane
-- 10:00 A (2c4g, auto retry) runs, B (2c4g) waits, queue free 0
UPDATE tide.nodes SET capacity = 'cpu=4, memory=8Gi' WHERE name = 'n1';
SELECT tide.submit('q', 'cpu=2, memory=4Gi', name => 'other', priority => 1000);
SELECT tide.submit('q', 'cpu=2, memory=4Gi', name => 'A', max_retries => 1, priority => 999);
SELECT tide.run_cycle();
SELECT tide.submit('q', 'cpu=2, memory=4Gi', name => 'B');
SELECT tide.run_cycle();
SELECT is(pg_temp.jstate('A') || ' ' || pg_temp.jstate('B'), 'allocated pending', '10:00 A runs, B waits');
-- 11:00 A is interrupted: it fails, its retry A1 is made
SELECT tide.exited(a.id, 137) FROM tide.allocations a WHERE a.job_id = pg_temp.jid('A');
SELECT ok((SELECT retry_of IS NOT NULL FROM tide.jobs WHERE id = pg_temp.jid('A')), '11:00 A1, the retry of A, exists');
UPDATE tide.jobs SET priority = 0 WHERE id = pg_temp.jid('A');   -- equal priority, as in the seed
UPDATE tide.jobs SET priority = 50 WHERE name = 'B';             -- even a higher one loses to the retry lane
SELECT is((SELECT avoid_nodes FROM tide.jobs WHERE id = pg_temp.jid('A')), ARRAY['n1'],
          'A exited non-zero on n1: its retry avoids n1 (R-L4)');
-- The seed's A was interrupted, not failed by its node: no node to avoid.
UPDATE tide.jobs SET avoid_nodes = '{}' WHERE id = pg_temp.jid('A');
SELECT tide.run_cycle();
SELECT is((SELECT state FROM tide.jobs WHERE id = pg_temp.jid('A')), 'allocated',
          'R-O3 11:00 A1 takes the freed 2c4g through the retry lane');
SELECT is(pg_temp.jstate('B'), 'pending', 'R-O3 11:00 B keeps waiting, whatever its priority');

-- ---------------------------------------------------------------- concurrency guard
SELECT ok(pg_try_advisory_xact_lock(tide._cycle_lock_key()), 'this transaction holds the cycle lock (re-entrant)');
SELECT isnt(tide.run_cycle(), NULL, 'R-C1: a cycle in the transaction that holds the lock runs');
SELECT is((SELECT count(*)::int FROM tide.job_events e JOIN tide.cycles c ON c.id = e.cycle_id
            WHERE e.new_state = 'allocated'), (SELECT count(*)::int FROM tide.job_events WHERE new_state = 'allocated'),
          'every allocated event belongs to a recorded cycle');
SELECT ok((SELECT bool_and(finished_at >= started_at AND load_ms >= 0 AND decide_ms >= 0 AND write_ms >= 0)
             FROM tide.cycles), 'cycle rows carry finish time and load/decide/write timings');

SELECT * FROM finish();
ROLLBACK;
