-- tide.resvec: operators, functions, aggregate, binary I/O, jsonb casts.
SET search_path = tide, public;

-- The type and its operator classes are sound.
SELECT typname, typlen, typalign, typstorage, typsend::text, typreceive::text
FROM pg_type WHERE oid = 'tide.resvec'::regtype;
SELECT opcname, amvalidate(opc.oid)
FROM pg_opclass opc JOIN pg_namespace n ON n.oid = opcnamespace
WHERE nspname = 'tide' AND opcname LIKE 'resvec%' ORDER BY opcname;
-- Every function of the type is immutable, strict and parallel safe.
SELECT proname, pg_get_function_identity_arguments(oid) AS args
FROM pg_proc
WHERE pronamespace = 'tide'::regnamespace
  AND (proname LIKE 'resvec%' OR proname IN ('get', 'each'))
  AND NOT (provolatile = 'i' AND proisstrict AND proparallel = 's');
SELECT count(*) AS aggregates_parallel_safe FROM pg_proc
WHERE oid = 'tide.sum(tide.resvec)'::regprocedure AND proparallel = 's';
-- Everything is commented.
SELECT p.oid::regprocedure AS uncommented FROM pg_proc p
WHERE pronamespace = 'tide'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL;
SELECT o.oid::regoperator AS uncommented FROM pg_operator o
WHERE oprnamespace = 'tide'::regnamespace AND obj_description(o.oid, 'pg_operator') IS NULL;

-- + and -
SELECT 'cpu=4, gpu=2'::resvec + 'cpu=0.5, memory=1Gi' AS sum;
SELECT '' ::resvec + 'cpu=1' AS left_empty, 'cpu=1'::resvec + '' AS right_empty;
SELECT 'cpu=4, gpu=2, memory=1Gi'::resvec - 'cpu=4, gpu=1' AS diff;
SELECT 'cpu=4'::resvec - 'cpu=4' AS to_empty, 'cpu=4'::resvec - '' AS minus_empty;
SELECT 'cpu=4, gpu=2'::resvec - 'cpu=4.001';
SELECT 'cpu=4, gpu=2'::resvec - 'rdma=1';
SELECT 'cpu=9223372036854775.807'::resvec + 'cpu=0.001';
SELECT 'a=1, cpu=9223372036854775'::resvec + 'cpu=0.807' AS at_the_limit;
SELECT 'cpu=1'::resvec OPERATOR(tide.+) 'gpu=1' AS qualified;

-- * by numeric (both orders), rounding to the nearest milli, halves away from zero
SELECT 'cpu=1.5, gpu=2'::resvec * 2.5 AS times_2_5, 0.5 * 'cpu=1.5, gpu=2'::resvec AS half;
SELECT 'cpu=1'::resvec * 0.0005 AS rounds_up, 'cpu=1'::resvec * 0.00049 AS rounds_to_zero;
SELECT 'cpu=0.001'::resvec * 1.5 AS one_and_a_half_milli, 'cpu=0.003'::resvec * (1.0 / 3) AS third;
SELECT 'cpu=4'::resvec * 0 AS times_zero, 'cpu=4'::resvec * 0.0 AS times_zero_numeric;
SELECT 'cpu=4'::resvec * -1;
SELECT 'cpu=4'::resvec * -0.5;
SELECT 'cpu=4'::resvec * 'NaN'::numeric;
SELECT 'cpu=4'::resvec * 'Infinity'::numeric;
SELECT ''::resvec * 'Infinity'::numeric AS empty_times_infinity;
SELECT 'cpu=1'::resvec * 9223372036854775.807 AS at_the_limit;
SELECT 'cpu=1'::resvec * 9223372036854775.808;
-- * by integer (both orders), exact
SELECT 'cpu=1.5, gpu=2'::resvec * 3 AS times_3, 4 * 'cpu=0.25'::resvec AS four_times;
SELECT 'cpu=9223372036854775'::resvec * 2;
SELECT 2 * 'cpu=4611686018427387.904'::resvec;
SELECT 'cpu=1'::resvec * -2;
SELECT pg_typeof('cpu=1'::resvec * 2) AS int_variant, pg_typeof('cpu=1'::resvec * 2::bigint) AS bigint_variant;

-- =, <>, @>, <@
SELECT 'cpu=4, gpu=2'::resvec = 'gpu=2, cpu=4.000' AS eq,
       'cpu=4, gpu=2'::resvec = 'cpu=4' AS eq2,
       'cpu=4, gpu=0'::resvec = 'cpu=4' AS zero_vanishes,
       'cpu=4'::resvec <> 'cpu=4000m' AS ne,
       'cpu=4'::resvec <> 'cpu=5' AS ne2;
SELECT a, b, a @> b AS holds, a <@ b AS fits
FROM (VALUES
    ('cpu=4, gpu=2'::resvec, 'cpu=4, gpu=1'::resvec),
    ('cpu=4, gpu=2', 'cpu=4, gpu=2'),
    ('cpu=4, gpu=2', 'cpu=4.001'),
    ('cpu=4, gpu=2', 'rdma=1'),
    ('cpu=4, gpu=2', ''),
    ('', ''),
    ('', 'cpu=0.001'),
    ('cpu=4', 'cpu=2, gpu=1'),
    ('a=1, b=1, c=1', 'b=1'),
    ('memory=16Gi', 'memory=17179869184')
) AS v(a, b);

-- Sort order (~<~ etc.), GROUP BY, DISTINCT, hash join, unique index.
SELECT r FROM (VALUES ('gpu=1'::resvec), ('cpu=2'), (''), ('cpu=1'), ('cpu=1, gpu=1'), ('B=1')) v(r) ORDER BY r;
SELECT 'cpu=1'::resvec ~<~ 'cpu=2' AS lt, 'cpu=1'::resvec ~<=~ 'cpu=1' AS le,
       'cpu=2'::resvec ~>~ 'cpu=1' AS gt, 'cpu=1'::resvec ~>=~ 'cpu=2' AS ge;
SELECT r, count(*) FROM (VALUES ('cpu=1, gpu=1'::resvec), ('gpu=1, cpu=1000m'), ('cpu=1'), (''), ('cpu=0')) v(r)
GROUP BY r ORDER BY r;
SELECT DISTINCT r FROM (VALUES ('cpu=1'::resvec), ('cpu=1.000'), ('gpu=1')) v(r) ORDER BY r;
CREATE TEMP TABLE rv_a (id int, r resvec);
CREATE TEMP TABLE rv_b (id int, r resvec);
INSERT INTO rv_a SELECT i, format('cpu=%s, gpu=%s', i % 5, i % 3)::resvec FROM generate_series(1, 200) i;
INSERT INTO rv_b SELECT i, format('gpu=%s, cpu=%s', i % 3, i % 5)::resvec FROM generate_series(1, 200) i;
SET enable_mergejoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM rv_a JOIN rv_b USING (r);
SELECT count(*) FROM rv_a JOIN rv_b USING (r);
RESET enable_mergejoin; RESET enable_nestloop;
SET enable_hashjoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM rv_a JOIN rv_b USING (r);
SELECT count(*) FROM rv_a JOIN rv_b USING (r);
RESET enable_hashjoin; RESET enable_nestloop;
SET enable_sort = off;
SELECT count(*) AS groups FROM (SELECT r FROM rv_a GROUP BY r) g;
RESET enable_sort;
CREATE UNIQUE INDEX ON rv_a (r) WHERE id <= 15;
INSERT INTO rv_a VALUES (1, 'gpu=1, cpu=1');
SELECT tide.resvec_hash('cpu=1, gpu=1') = tide.resvec_hash('gpu=1, cpu=1000m') AS hash_canonical,
       tide.resvec_hash_extended('cpu=1', 7) = tide.resvec_hash_extended('cpu=1.0', 7) AS hash_ext,
       tide.resvec_hash_extended('cpu=1', 7) <> tide.resvec_hash_extended('cpu=1', 8) AS seed_matters;

-- get, resvec_names, each
SELECT tide.get('cpu=4, memory=16Gi, gpu=0.5', 'cpu') AS cpu,
       tide.get('cpu=4, memory=16Gi, gpu=0.5', 'memory') AS memory,
       tide.get('cpu=4, memory=16Gi, gpu=0.5', 'gpu') AS gpu,
       tide.get('cpu=4, memory=16Gi, gpu=0.5', 'rdma') AS missing,
       tide.get('cpu=4', 'CPU') AS case_sensitive,
       tide.get('', 'cpu') AS from_empty,
       pg_typeof(tide.get('cpu=4', 'cpu')) AS type;
SELECT tide.get('x=9223372036854775.807', 'x') AS largest, tide.get('x=1m', 'x') AS smallest;
SELECT tide.resvec_names('gpu=1, cpu=2, NVIDIA-H200=1') AS names, tide.resvec_names('') AS none;
SELECT * FROM tide.each('gpu=0.5, cpu=2, memory=1Ki');
SELECT count(*) AS no_rows FROM tide.each('');

-- sum: NULL for no rows, NULLs skipped, overflow is an error.
SELECT tide.sum(r) AS no_rows FROM rv_a WHERE false;
SELECT tide.sum(r) FROM (VALUES ('cpu=1'::resvec), (NULL), ('gpu=1, cpu=0.5'), ('')) v(r);
SELECT tide.sum(r) FROM (VALUES ('cpu=9223372036854775'::resvec), ('cpu=1')) v(r);
SELECT id % 2 AS half, tide.sum(r) FROM rv_a GROUP BY 1 ORDER BY 1;

-- sum under a forced parallel plan.
CREATE TABLE rv_big (id int, r resvec);
INSERT INTO rv_big
SELECT i, format('cpu=%s, gpu=%s, memory=%sMi, slot-%s=1', (i % 7) * 0.5, i % 3, i % 11, i % 4)::resvec
FROM generate_series(1, 20000) i;
ANALYZE rv_big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT tide.sum(r) FROM rv_big;
SELECT tide.sum(r) FROM rv_big;
-- the same sum computed per component, serially
RESET max_parallel_workers_per_gather;
SET max_parallel_workers_per_gather = 0;
SELECT tide.sum(r) = (SELECT format('cpu=%s, gpu=%s, memory=%sMi, slot-0=%s, slot-1=%s, slot-2=%s, slot-3=%s',
                                   sum((id % 7) * 0.5), sum(id % 3), sum(id % 11),
                                   count(*) FILTER (WHERE id % 4 = 0), count(*) FILTER (WHERE id % 4 = 1),
                                   count(*) FILTER (WHERE id % 4 = 2), count(*) FILTER (WHERE id % 4 = 3))::resvec
                     FROM rv_big) AS parallel_equals_serial
FROM rv_big;
RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- Binary COPY round trip.
CREATE TEMP TABLE rv_copy (id int, r resvec);
DO $$
DECLARE f text := '/tmp/pg_tide_resvec_' || pg_backend_pid() || '.bin';
BEGIN
    EXECUTE format('COPY (SELECT id, r FROM rv_big WHERE id <= 500 UNION ALL SELECT 0, %L::tide.resvec) TO %L WITH (FORMAT binary)', '', f);
    EXECUTE format('COPY rv_copy FROM %L WITH (FORMAT binary)', f);
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'cat >/dev/null; rm -f ' || f);
END $$;
SELECT count(*) AS copied,
       count(*) FILTER (WHERE c.r = b.r) AS equal,
       count(*) FILTER (WHERE c.id = 0 AND c.r = '') AS empty_ok
FROM rv_copy c LEFT JOIN rv_big b USING (id);

-- Binary input is validated like text: feed crafted bytes through a binary
-- COPY file written from a bytea column (bytea's binary form is its bytes).
CREATE TEMP TABLE rv_recv (r resvec);
CREATE FUNCTION pg_temp.recv(hex text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    f text := '/tmp/pg_tide_resvec_recv_' || pg_backend_pid() || '.bin';
    res text; msg text;
BEGIN
    TRUNCATE rv_recv;
    EXECUTE format('COPY (SELECT decode(%L, ''hex'')) TO %L WITH (FORMAT binary)', hex, f);
    BEGIN
        EXECUTE format('COPY rv_recv FROM %L WITH (FORMAT binary)', f);
        SELECT r::text INTO res FROM rv_recv;
    EXCEPTION WHEN others THEN
        GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
        res := 'ERROR: ' || msg;
    END;
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'cat >/dev/null; rm -f ' || f);
    RETURN res;
END $$;
SELECT what, pg_temp.recv(hex) AS result FROM (VALUES
    ('valid cpu=1, gpu=2',   '00000002' || '00000000' || '00000003' || '637075' || '00000000000003e8'
                                                      || '00000003' || '677075' || '00000000000007d0'),
    ('empty',                '00000000' || '00000000'),
    ('reserved not zero',    '00000000' || '00000001'),
    ('negative count',       'ffffffff' || '00000000'),
    ('count too large',      '00000005' || '00000000' || '00000003' || '637075' || '00000000000003e8'),
    ('unsorted',             '00000002' || '00000000' || '00000003' || '677075' || '00000000000003e8'
                                                      || '00000003' || '637075' || '00000000000007d0'),
    ('duplicate',            '00000002' || '00000000' || '00000003' || '637075' || '00000000000003e8'
                                                      || '00000003' || '637075' || '00000000000007d0'),
    ('zero quantity',        '00000001' || '00000000' || '00000003' || '637075' || '0000000000000000'),
    ('negative quantity',    '00000001' || '00000000' || '00000003' || '637075' || 'ffffffffffffffff'),
    ('bad name',             '00000001' || '00000000' || '00000003' || '632075' || '00000000000003e8'),
    ('NUL in name',          '00000001' || '00000000' || '00000003' || '630075' || '00000000000003e8'),
    ('empty name',           '00000001' || '00000000' || '00000000' || '00000000000003e8' || '0000000000'),
    ('name length too long', '00000001' || '00000000' || '7fffffff' || '637075' || '00000000000003e8'),
    ('truncated',            '00000001' || '00000000' || '00000003' || '637075' || '0000'),
    ('trailing bytes',       '00000000' || '00000000' || '00')
) AS v(what, hex);

-- jsonb casts
SELECT 'cpu=4, memory=16Gi, gpu=0.5'::resvec::jsonb AS to_jsonb, ''::resvec::jsonb AS empty;
SELECT '{"cpu": 4, "memory": "16Gi", "gpu": 0.5, "rdma": "250m", "zero": 0}'::jsonb::resvec AS from_jsonb;
SELECT '{}'::jsonb::resvec AS empty;
SELECT '{"cpu": 4.000, "x": 1.5e3, "y": "0.5Ki"}'::jsonb::resvec AS numbers;
SELECT r::jsonb::resvec = r AS round_trip
FROM (VALUES ('cpu=4, memory=16Gi'::resvec), (''), ('x=9223372036854775.807, y=0.001')) v(r);
SELECT '[1, 2]'::jsonb::resvec;
SELECT '4'::jsonb::resvec;
SELECT '{"cpu": true}'::jsonb::resvec;
SELECT '{"cpu": null}'::jsonb::resvec;
SELECT '{"cpu": [4]}'::jsonb::resvec;
SELECT '{"cpu": {"n": 4}}'::jsonb::resvec;
SELECT '{"cpu": -1}'::jsonb::resvec;
SELECT '{"cpu": 1.0005}'::jsonb::resvec;
SELECT '{"cpu": "4Qi"}'::jsonb::resvec;
SELECT '{"cpu": ""}'::jsonb::resvec;
SELECT '{"cpu": 1e30}'::jsonb::resvec;
SELECT '{"c p u": 1}'::jsonb::resvec;
SELECT '{"": 1}'::jsonb::resvec;

-- Large values are compressed and toasted, and read back through detoasting.
CREATE TEMP TABLE rv_toast (r resvec);
INSERT INTO rv_toast
SELECT string_agg(format('resource-%s=%s', i, i), ', ')::resvec FROM generate_series(1, 2000) i;
SELECT pg_column_size(r) < octet_length(r::text) AS compressed,
       array_length(tide.resvec_names(r), 1) AS components,
       tide.get(r, 'resource-1999') AS one,
       r = (SELECT string_agg(format('resource-%s=%s', i, i), ',')::resvec FROM generate_series(1, 2000) i) AS equal
FROM rv_toast;
SELECT tide.sum(r) OPERATOR(tide.=) r * 1 AS sum_of_one FROM rv_toast GROUP BY r;

-- A btree index answers equality.
CREATE INDEX rv_a_r_btree ON rv_a (r);
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM rv_a WHERE r = 'cpu=3, gpu=2';
SELECT count(*) FROM rv_a WHERE r = 'gpu=2, cpu=3';
RESET enable_seqscan; RESET enable_bitmapscan;

-- Output is canonical: text of a value reads back as the same value.
SELECT count(*) FILTER (WHERE r::text::resvec <> r) AS mismatches, count(*) AS checked FROM rv_big;
DROP TABLE rv_big;
