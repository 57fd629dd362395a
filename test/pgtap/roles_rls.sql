-- Row-level security, tried: two submitters' rows in every table with
-- row-level security, and each role's view of them.  For each such table
-- and role: whose rows SELECT returns, and what an UPDATE and a DELETE of
-- the other tenant's rows do (for the launcher, the rows of a node it may
-- not act for), compared with the decided results in "expect".  Then every
-- view a submitter may read, read as one submitter: its own jobs, nothing
-- of the other's.  Each attempt runs in a subtransaction rolled back.
--
-- A table that gains row-level security fails until its rows are decided:
-- add (table, role, sees, update, delete) to "expect" for the five roles.
BEGIN;
CREATE EXTENSION pg_tide;
\ir _fixture.psql

-- Archived: a job of each submitter that ran, was evicted and cancelled.
SELECT tide.submit('q1', 'gpu=1', name => 'alice-old') AS xa, tide.submit('q1', 'cpu=1', name => 'bob-old') AS xb \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id = :xa;
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id = :xb;
SELECT pg_temp.place(:xa, ARRAY['n1']);
SELECT pg_temp.place(:xb, ARRAY['n3']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:xa) || pg_temp.allocs(:xb)) a;
SELECT tide._evict(ARRAY[:xa, :xb]::bigint[], ARRAY['x', 'x']);
SELECT tide.cancel(:xa), tide.cancel(:xb);
SELECT tide.evicted(a) FROM unnest(pg_temp.allocs(:xa) || pg_temp.allocs(:xb)) a;
SELECT tide._archive_jobs(now() + interval '1 day', 100) AS archived \gset
-- Live: a pending job of each, and a running one of each (alice's on n1,
-- bob's on n3, whose launcher_role is tap_l3), each evicted by the other's.
SELECT tide.submit('q1', 'gpu=1', name => 'alice-pending') AS ja, tide.submit('q1', 'gpu=1', name => 'bob-pending') AS jb,
       tide.submit('q1', 'gpu=1', name => 'alice-running', command => 'alice-cmd') AS jar,
       tide.submit('q1', 'cpu=1', name => 'bob-running', command => 'bob-cmd') AS jbr \gset
UPDATE tide.jobs SET owner = 'tap_alice' WHERE id IN (:ja, :jar);
UPDATE tide.jobs SET owner = 'tap_bob' WHERE id IN (:jb, :jbr);
SELECT pg_temp.place(:jar, ARRAY['n1']);
SELECT pg_temp.place(:jbr, ARRAY['n3']);
SELECT tide.started(a) FROM unnest(pg_temp.allocs(:jar) || pg_temp.allocs(:jbr)) a;
SELECT tide._evict(ARRAY[:jar, :jbr]::bigint[], ARRAY['x', 'x'], NULL, ARRAY[:jb, :ja]::bigint[]);
-- Pipelines: a dependency of each pending job, an array of each submitter.
INSERT INTO tide.job_dependencies (job_id, depends_on) VALUES (:ja, :jar), (:jb, :jbr);
INSERT INTO tide.job_arrays (queue, owner, size) VALUES ('q1', 'tap_alice', 1), ('q1', 'tap_bob', 1);
-- Owners' averages within a queue (R-O7): one of each.
UPDATE tide.queues SET owner_fair_share = true WHERE name = 'q1';
INSERT INTO tide.owner_fair_usage (queue, owner, decayed, updated_at)
VALUES ('q1', 'tap_alice', '{"gpu": 1}', now()), ('q1', 'tap_bob', '{"gpu": 1}', now());
CREATE TEMP TABLE bob_jobs AS SELECT id FROM tide.jobs_all WHERE owner = 'tap_bob';
GRANT SELECT ON bob_jobs TO PUBLIC;

-- The tables with row-level security, and the column that tells whose a row is.
CREATE TEMP TABLE rls AS
SELECT c.oid::regclass AS t,
       (SELECT a.attname::text FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attname IN ('owner', 'job_id', 'name') AND NOT a.attisdropped
         ORDER BY array_position(ARRAY['owner', 'job_id', 'name'], a.attname::text) LIMIT 1) AS col
  FROM pg_class c
 WHERE c.relnamespace = 'tide'::regnamespace AND c.relrowsecurity;

-- Whose rows: owners without "tap_", node names for nodes.
CREATE FUNCTION pg_temp.whose(col text, v text) RETURNS text LANGUAGE sql AS $$
SELECT CASE col WHEN 'owner' THEN replace(v, 'tap_', '')
                WHEN 'job_id' THEN (SELECT replace(j.owner, 'tap_', '') FROM tide.jobs_all j WHERE j.id = v::bigint)
                ELSE v END
$$;
-- What role r sees of table t, and what an UPDATE and a DELETE of the other
-- tenant's rows (bob's; for nodes, n3) do: "N rows", "refused" (42501) or
-- "error SQLSTATE".
CREATE FUNCTION pg_temp.tried(r text, t regclass, col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got text[];
    sees text;
    res text[] := '{}';
    n bigint;
    other text := CASE col WHEN 'owner' THEN 'owner = ''tap_bob'''
                           WHEN 'job_id' THEN 'job_id IN (SELECT id FROM pg_temp.bob_jobs)'
                           ELSE 'name = ''n3''' END;
    setcol text;
    sql text;
BEGIN
    BEGIN
        EXECUTE format('SET LOCAL ROLE %I', r);
        EXECUTE format('SELECT array_agg(DISTINCT %I::text) FROM %s', col, t) INTO got;
        RAISE EXCEPTION 'undo' USING ERRCODE = 'P0099';
    EXCEPTION WHEN SQLSTATE 'P0099' THEN
        sees := coalesce((SELECT string_agg(DISTINCT pg_temp.whose(col, g), ' ') FROM unnest(got) g), 'nothing');
    WHEN insufficient_privilege THEN
        sees := 'refused';
    END;
    SELECT a.attname INTO setcol FROM pg_attribute a
     WHERE a.attrelid = t AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY has_column_privilege(r, t, a.attnum, 'UPDATE') DESC, a.attnum LIMIT 1;
    FOREACH sql IN ARRAY ARRAY[format('UPDATE %s SET %I = %I WHERE %s', t, setcol, setcol, other),
                               format('DELETE FROM %s WHERE %s', t, other)] LOOP
        BEGIN
            EXECUTE format('SET LOCAL ROLE %I', r);
            EXECUTE sql;
            GET DIAGNOSTICS n = ROW_COUNT;
            RAISE EXCEPTION '%', n USING ERRCODE = 'P0099';
        EXCEPTION WHEN SQLSTATE 'P0099' THEN
            res := res || (SQLERRM || ' rows');
        WHEN insufficient_privilege THEN
            res := res || 'refused'::text;
        WHEN OTHERS THEN
            res := res || ('error ' || SQLSTATE);
        END;
    END LOOP;
    RETURN format('sees %s; update %s; delete %s', sees, res[1], res[2]);
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pg_temp TO PUBLIC;

CREATE TEMP TABLE who (n int, r text);
INSERT INTO who VALUES (1, 'tap_admin'), (2, 'tap_alice'), (3, 'tap_l1'), (4, 'tap_reader'), (5, 'tap_nobody');

-- sees: whose rows SELECT returns ("nothing", or "refused" without the
-- privilege); update / delete: of the other tenant's rows.
CREATE TEMP TABLE expect (t text, r text, sees text, upd text, del text);
INSERT INTO expect VALUES
 ('tide.allocations'             , 'tap_admin' , 'alice bob'         , '1 rows'    , '1 rows'),
 ('tide.allocations'             , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.allocations'             , 'tap_l1'    , 'alice'             , '0 rows'    , 'refused'),
 ('tide.allocations'             , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.allocations'             , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.allocations_archive'     , 'tap_admin' , 'alice bob'         , 'refused'   , 'refused'),
 ('tide.allocations_archive'     , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.allocations_archive'     , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.allocations_archive'     , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.allocations_archive'     , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.evictions'               , 'tap_admin' , 'alice bob'         , '1 rows'    , '1 rows'),
 ('tide.evictions'               , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.evictions'               , 'tap_l1'    , 'alice'             , 'refused'   , 'refused'),
 ('tide.evictions'               , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.evictions'               , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.evictions_archive'       , 'tap_admin' , 'alice bob'         , 'refused'   , 'refused'),
 ('tide.evictions_archive'       , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.evictions_archive'       , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.evictions_archive'       , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.evictions_archive'       , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.job_events'              , 'tap_admin' , 'alice bob'         , 'refused'   , '10 rows'),
 ('tide.job_events'              , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_events'              , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.job_events'              , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_events'              , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.job_arrays'              , 'tap_admin' , 'alice bob'         , '1 rows'    , '1 rows'),
 ('tide.job_arrays'              , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_arrays'              , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.job_arrays'              , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_arrays'              , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.job_dependencies'        , 'tap_admin' , 'alice bob'         , '1 rows'    , '1 rows'),
 ('tide.job_dependencies'        , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_dependencies'        , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.job_dependencies'        , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_dependencies'        , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.job_tasks'               , 'tap_admin' , 'alice bob'         , 'error 55000', 'error 55000'),
 ('tide.job_tasks'               , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_tasks'               , 'tap_l1'    , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_tasks'               , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_tasks'               , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.job_tasks_archive'       , 'tap_admin' , 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_tasks_archive'       , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.job_tasks_archive'       , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.job_tasks_archive'       , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.job_tasks_archive'       , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.jobs'                    , 'tap_admin' , 'alice bob'         , '2 rows'    , 'error 55006'),
 ('tide.jobs'                    , 'tap_alice' , 'alice'             , '0 rows'    , 'refused'),
 ('tide.jobs'                    , 'tap_l1'    , 'alice'             , 'refused'   , 'refused'),
 ('tide.jobs'                    , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.jobs'                    , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.jobs_archive'            , 'tap_admin' , 'alice bob'         , 'refused'   , 'refused'),
 ('tide.jobs_archive'            , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.jobs_archive'            , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.jobs_archive'            , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.jobs_archive'            , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.owner_fair_usage'        , 'tap_admin' , 'alice bob'         , '1 rows'    , '1 rows'),
 ('tide.owner_fair_usage'        , 'tap_alice' , 'alice'             , 'refused'   , 'refused'),
 ('tide.owner_fair_usage'        , 'tap_l1'    , 'refused'           , 'refused'   , 'refused'),
 ('tide.owner_fair_usage'        , 'tap_reader', 'alice bob'         , 'refused'   , 'refused'),
 ('tide.owner_fair_usage'        , 'tap_nobody', 'refused'           , 'refused'   , 'refused'),
 ('tide.nodes'                   , 'tap_admin' , 'n1 n2 n3'          , '1 rows'    , 'error 23503'),
 ('tide.nodes'                   , 'tap_alice' , 'n1 n2 n3'          , 'refused'   , 'refused'),
 ('tide.nodes'                   , 'tap_l1'    , 'n1 n2 n3'          , '0 rows'    , 'refused'),
 ('tide.nodes'                   , 'tap_reader', 'n1 n2 n3'          , 'refused'   , 'refused'),
 ('tide.nodes'                   , 'tap_nobody', 'refused'           , 'refused'   , 'refused');

SELECT plan((SELECT count(*)::int FROM rls) * 5
            + (SELECT count(*)::int FROM pg_class WHERE relnamespace = 'tide'::regnamespace AND relkind = 'v'
                  AND has_table_privilege('tide_submitter', oid, 'SELECT'))
            + 5);

SELECT is(pg_temp.tried(w.r, x.t, x.col),
          CASE WHEN e.t IS NULL THEN '(no decided row)' ELSE format('sees %s; update %s; delete %s', e.sees, e.upd, e.del) END,
          CASE WHEN e.t IS NULL
               THEN format('table %s has row-level security but NO DECIDED ROW for %s: add (%L, %L, sees, update, delete) to "expect" in test/pgtap/roles_rls.sql',
                           x.t, w.r, x.t::text, w.r)
               ELSE format('%s as %s: what it sees, and the other tenant''s rows', x.t, w.r) END)
  FROM rls x CROSS JOIN who w LEFT JOIN expect e ON e.t = x.t::text AND e.r = w.r
 ORDER BY x.t::text, w.n;

-- Every view a submitter may read shows alice her own jobs and nothing of
-- bob's: no row with his role, his jobs' names or commands, or a job_id of
-- his.  Decided: an eviction of alice's job names its preemptor's id
-- (evictions.preemptor_job_id, bob's job here) but not its owner or queue,
-- which come through jobs_all under row-level security; the id only exists
-- for a job that did evict hers, so it cannot be used to probe ids.
CREATE FUNCTION pg_temp.view_as_alice(v regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    own bigint;
    other bigint;
BEGIN
    SET LOCAL ROLE tap_alice;
    EXECUTE format($q$SELECT count(*) FILTER (WHERE j::text ~ '"tap_alice"|"alice-' OR (j->>'job_id')::bigint IN (SELECT id FROM tide.jobs_all)),
                             count(*) FILTER (WHERE j::text ~ 'tap_bob|bob-' OR (j->>'job_id')::bigint IN (SELECT id FROM pg_temp.bob_jobs))
                        FROM (SELECT to_jsonb(v) AS j FROM %s v) s$q$, v) INTO own, other;
    RESET ROLE;
    RETURN format('its own: %s; the other''s: %s', CASE WHEN own > 0 THEN 'some' ELSE 'none' END, other);
END $$;
SELECT is(pg_temp.view_as_alice(c.oid::regclass), 'its own: some; the other''s: 0',
          format('view %s as a submitter: its own jobs, none of another''s', c.oid::regclass))
  FROM pg_class c
 WHERE c.relnamespace = 'tide'::regnamespace AND c.relkind = 'v' AND has_table_privilege('tide_submitter', c.oid, 'SELECT')
 ORDER BY c.oid::regclass::text;

-- Owners and bypass.  The extension's tables belong to the role that
-- installed it (a superuser, or with pg_tide trusted the installing
-- owner); SECURITY DEFINER helpers run as that owner and must see every
-- row, so no table forces row-level security.  No pg_tide role owns an
-- object of the schema or bypasses row-level security, so none escapes
-- the policies.
SELECT is((SELECT array_agg(relname::text ORDER BY relname) FROM pg_class
            WHERE relnamespace = 'tide'::regnamespace AND relforcerowsecurity),
          NULL, 'no table forces row-level security on its owner');
SELECT is((SELECT array_agg(DISTINCT c.relowner::regrole::text) FROM pg_class c WHERE c.relnamespace = 'tide'::regnamespace),
          ARRAY[(SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'pg_tide')],
          'every relation of the schema belongs to the extension''s owner');
SELECT is((SELECT array_agg(rolname::text ORDER BY rolname) FROM pg_roles
            WHERE rolname IN ('tide_admin', 'tide_submitter', 'tide_launcher', 'tide_reader')
              AND (rolsuper OR rolbypassrls OR rolcanlogin)),
          NULL, 'the pg_tide roles are not superusers, do not bypass row-level security and cannot log in');
-- A table with whose rows (owner or job_id) that a submitter or a launcher
-- may read has row-level security.
SELECT is((SELECT array_agg(c.oid::regclass::text ORDER BY c.oid::regclass::text) FROM pg_class c
            WHERE c.relnamespace = 'tide'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relrowsecurity
              AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname IN ('owner', 'job_id', 'job_ids'))
              AND (has_any_column_privilege('tide_submitter', c.oid, 'SELECT')
                   OR has_any_column_privilege('tide_launcher', c.oid, 'SELECT'))),
          NULL, 'every table with tenants'' rows that a submitter or launcher may read has row-level security');
SELECT is(:archived::bigint, 2::bigint, 'the fixture archived a job of each submitter');

SELECT * FROM finish();
ROLLBACK;
