-- A submitter learns nothing about a job it may not see: every path it has
-- (task rows, tide.cancel, the cancel flag, tables and views, functions)
-- answers for another owner's job, in any state, exactly as for an id that
-- does not exist.  Each call runs as the role in a subtransaction that is
-- always rolled back.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql

-- Alice's jobs: one pending, one placed and running, one cancelled, one
-- that failed (with its retry pending), one succeeded.  Bob probes them.
SELECT tide.submit('q1', 'gpu=1') AS jp, tide.submit('q1', 'gpu=1') AS jr,
       tide.submit('q1', 'gpu=1') AS jc, tide.submit('q1', 'gpu=1', max_retries => 1) AS jf,
       tide.submit('q1', 'gpu=1') AS js \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:jp, :jr, :jc, :jf, :js);
SELECT pg_temp.place(:jr, ARRAY['n1']), pg_temp.place(:jf, ARRAY['n1']), pg_temp.place(:js, ARRAY['n2']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:jr)) a;
SELECT tide.exited(a, 3) FROM unnest(pg_temp.allocs(:jf)) a;
SELECT tide.exited(a, 0) FROM unnest(pg_temp.allocs(:js)) a;
SELECT tide.cancel(:jc);
SELECT (SELECT max(id) FROM tide.jobs) + 1000 AS missing \gset

-- What role r is told when it runs sql with $1 replaced by the job id: the
-- SQLSTATE and message of the error (the id written as N), or the rows it
-- returned or changed.
CREATE FUNCTION pg_temp.answer(r text, sql text, job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    said text;
    n bigint;
    st text;
    msg text;
BEGIN
    BEGIN
        EXECUTE format('SET LOCAL ROLE %I', r);
        EXECUTE replace(sql, '$1', job::text);
        GET DIAGNOSTICS n = ROW_COUNT;
        said := 'ok, ' || n || ' rows';
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0099';
    EXCEPTION WHEN SQLSTATE 'P0099' THEN
        NULL;
    WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
        said := st || ': ' || regexp_replace(msg, '\m' || job || '\M', 'N', 'g');
    END;
    RESET ROLE;
    RETURN said;
END $$;
-- A query's answer as data: its rows as text, for reads.
CREATE FUNCTION pg_temp.rows(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
    EXECUTE format('SELECT coalesce(string_agg(s::text, '';'' ORDER BY s::text), ''none'') FROM (%s) s', q) INTO t;
    RETURN t;
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pg_temp TO PUBLIC;

CREATE TEMP TABLE probes (n serial, what text, sql text);
GRANT SELECT ON probes TO PUBLIC;
INSERT INTO probes (what, sql) VALUES
 ('insert a task',               $$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES ($1, 'extra', 1, 'cpu=1')$$),
 ('insert a bad task',           $$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES ($1, 'extra', 1, '')$$),
 ('insert its own task role',    $$INSERT INTO tide.job_tasks (job_id, role, replicas, request) VALUES ($1, 'main', 1, 'cpu=1')$$),
 ('update a task',               $$UPDATE tide.job_tasks SET replicas = 2 WHERE job_id = $1$$),
 ('delete a task',               $$DELETE FROM tide.job_tasks WHERE job_id = $1$$),
 ('tide.cancel',                 $$SELECT tide.cancel($1)$$),
 ('set cancel_requested',        $$UPDATE tide.jobs SET cancel_requested = true WHERE id = $1$$),
 ('delete the job',              $$DELETE FROM tide.jobs WHERE id = $1$$),
 ('read the job',                $$SELECT pg_temp.rows('SELECT id FROM tide.jobs WHERE id = $1 OR retry_of = $1')$$),
 ('read its tasks',              $$SELECT pg_temp.rows('SELECT job_id FROM tide.job_tasks WHERE job_id = $1')$$),
 ('read its allocations',        $$SELECT pg_temp.rows('SELECT id FROM tide.allocations WHERE job_id = $1')$$),
 ('read its evictions',          $$SELECT pg_temp.rows('SELECT id FROM tide.evictions WHERE job_id = $1')$$),
 ('read its history',            $$SELECT pg_temp.rows('SELECT id FROM tide.job_events WHERE job_id = $1')$$),
 ('read tide.pending',           $$SELECT pg_temp.rows('SELECT job_id FROM tide.pending WHERE job_id = $1')$$),
 ('tide.explain',                $$SELECT tide.explain($1)$$),
 ('tide.estimate_start',         $$SELECT tide.estimate_start($1)$$),
 ('tide._launches_job',          $$SELECT pg_temp.rows('SELECT tide._launches_job($1, CURRENT_USER)')$$);

SELECT plan((SELECT count(*)::int * 5 FROM probes));

SELECT is(pg_temp.answer('tap_bob', p.sql, j.id), pg_temp.answer('tap_bob', p.sql, :missing),
          format('%s: alice''s %s job answers bob as a missing one', p.what, j.st))
  FROM probes p
 CROSS JOIN (VALUES (1, :jp::bigint, 'pending'), (2, :jr, 'running'), (3, :jc, 'cancelled'),
                    (4, :jf, 'failed'), (5, :js, 'succeeded')) AS j(k, id, st)
 ORDER BY p.n, j.k;

SELECT * FROM finish();
ROLLBACK;
