-- R-P1 for many rows at once: dependencies added, deleted and judged in
-- one statement cost work per row changed, not per row times rows.  What
-- is asserted is deterministic, how often each pg_tide function is called
-- (track_functions), never a time: a function called once per job that a
-- statement names (a job's reason, a job's outcome) is how that cost went
-- quadratic, each call planned alone and, without statistics, scanning
-- tide.jobs whole (20,000 dependencies among 100k pending jobs: nearly 8
-- minutes; bench/deps_bench.sh).
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql
SELECT plan(12);
SET LOCAL track_functions = 'all';

-- 200 pending jobs; the second hundred will wait for the first
CREATE TEMP TABLE bulk AS
SELECT i, tide.submit('q1', 'gpu=1') AS id FROM generate_series(1, 200) i;

-- The pg_tide functions called at least n times since pg_temp.mark(),
-- but those that work on one row by design: the dependency rows' BEFORE
-- INSERT trigger and what it calls, and the reason texts.
CREATE TEMP TABLE marked (funcid oid PRIMARY KEY, calls bigint);
CREATE FUNCTION pg_temp.mark() RETURNS void LANGUAGE sql AS $$
    DELETE FROM marked;
    INSERT INTO marked SELECT f.funcid, f.calls FROM pg_stat_xact_user_functions f WHERE f.schemaname = 'tide';
$$;
CREATE FUNCTION pg_temp.called(n integer) RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(format('%s: %s calls', f.funcid::regprocedure, f.calls - coalesce(m.calls, 0))
                              ORDER BY f.funcid::regprocedure::text), '{}')
      FROM pg_stat_xact_user_functions f LEFT JOIN marked m ON m.funcid = f.funcid
     WHERE f.schemaname = 'tide' AND f.calls - coalesce(m.calls, 0) >= n
       AND f.funcid NOT IN ('tide._job_dependencies_before_insert()'::regprocedure,
                            'tide._restoring()'::regprocedure,
                            'tide._check_choice(text,text,text[],text)'::regprocedure,
                            'tide._wait_text(boolean,boolean,text,text,boolean,timestamptz,boolean,bigint,integer,integer)'::regprocedure,
                            'tide._condition_verb(text)'::regprocedure)
$$;

SELECT pg_temp.mark();
INSERT INTO tide.job_dependencies (job_id, depends_on)
SELECT b.id, a.id FROM bulk a JOIN bulk b ON b.i = a.i + 100 WHERE a.i <= 100;
SELECT is(pg_temp.called(100), '{}', 'adding 100 dependencies in one statement: no function called per row');
SELECT is((SELECT count(*) FROM tide.jobs j JOIN bulk b ON b.id = j.id JOIN bulk a ON a.i = b.i - 100
            WHERE j.waiting AND j.dependencies_unmet = 1 AND j.pending_reason = format('waits for job %s to succeed', a.id)),
          100::bigint, 'each dependent waits, its reason naming the job');

SELECT pg_temp.mark();
DELETE FROM tide.job_dependencies d USING bulk b WHERE d.job_id = b.id;
SELECT is(pg_temp.called(100), '{}', 'deleting them in one statement: no function called per row');
SELECT is((SELECT count(*) FROM tide.jobs j JOIN bulk b ON b.id = j.id
            WHERE j.waiting OR j.dependencies_unmet <> 0 OR j.pending_reason IS NOT NULL),
          0::bigint, 'no job waits any more, none keeps a reason');

INSERT INTO tide.job_dependencies (job_id, depends_on)
SELECT b.id, a.id FROM bulk a JOIN bulk b ON b.i = a.i + 100 WHERE a.i <= 100;
SELECT pg_temp.mark();
UPDATE tide.jobs j SET cancel_requested = true FROM bulk a WHERE j.id = a.id AND a.i <= 100;
SELECT is(pg_temp.called(100), '{}', 'cancelling the 100 jobs waited for in one statement: no function called per row');
SELECT is((SELECT count(*) FROM tide.jobs j JOIN bulk b ON b.id = j.id JOIN bulk a ON a.i = b.i - 100
            WHERE j.state = 'cancelled'
              AND j.state_reason = format('dependency not met: waited for job %s to succeed, but it was cancelled', a.id)),
          100::bigint, 'their dependents are cancelled, each naming its dependency');

-- a chain added in one statement: each new row's walk for a loop visits
-- a job once (walks carrying their paths were cubic in the chain's length)
CREATE TEMP TABLE chain AS
SELECT i, tide.submit('q1', 'gpu=1') AS id FROM generate_series(1, 100) i;
SELECT lives_ok($$INSERT INTO tide.job_dependencies (job_id, depends_on)
                  SELECT b.id, a.id FROM chain a JOIN chain b ON b.i = a.i + 1$$,
                'a chain of 99 dependencies in one statement');
SELECT is((SELECT count(*) FROM tide.jobs j JOIN chain c ON c.id = j.id WHERE j.waiting), 99::bigint,
          'every job of the chain but the first waits');
SELECT throws_like($$INSERT INTO tide.job_dependencies (job_id, depends_on)
                     SELECT a.id, b.id FROM chain a JOIN chain b ON b.i = a.i + 1 WHERE a.i IN (1, 50)$$,
                   'dependencies would form a cycle: job % waits for job %',
                   'rows closing loops in one statement are refused, naming a loop');

-- the check itself sees a function called per row
SELECT pg_temp.mark();
SELECT count(tide._condition_verb('failed')) FROM generate_series(1, 100);
SELECT is(cardinality(pg_temp.called(100)), 0, 'the functions called per row by design are left out');
CREATE FUNCTION tide._tap_per_row(x integer) RETURNS integer LANGUAGE sql STABLE SET search_path = pg_catalog AS $$ SELECT x $$;
SELECT pg_temp.mark();
SELECT count(tide._tap_per_row(g)) FROM generate_series(1, 100) g;
SELECT is(pg_temp.called(100), ARRAY['tide._tap_per_row(integer): 100 calls'], 'a function called per row is listed');
SELECT is(pg_temp.called(101), '{}', 'only from n calls');

SELECT * FROM finish();
ROLLBACK;
