--
-- tide.gpumask: a set of GPU indices 0..63.
--
SET search_path = tide, public;
\pset null '<null>'

-- The operator classes are well formed (as seg's test does).
SELECT opcname, amvalidate(opc.oid)
FROM pg_opclass opc JOIN pg_namespace n ON n.oid = opcnamespace
WHERE nspname = 'tide' AND opcintype = 'tide.gpumask'::regtype
ORDER BY opcname;

-- The type's storage is a pass-by-value 8-byte double-aligned value.
SELECT typlen, typbyval, typalign, typstorage
FROM pg_type WHERE oid = 'tide.gpumask'::regtype;

-- Every function of the type is immutable, strict and parallel safe (the
-- internal helpers, named _..., are SQL the planner inlines instead).
SELECT p.proname, p.provolatile, p.proisstrict, p.proparallel
FROM pg_proc p
WHERE p.pronamespace = 'tide'::regnamespace
  AND p.proname NOT LIKE '\_%'
  AND (p.proargtypes::regtype[] && ARRAY['tide.gpumask'::regtype]
       OR p.prorettype = 'tide.gpumask'::regtype)
  AND p.prokind = 'f'
  AND (p.provolatile <> 'i' OR NOT p.proisstrict OR p.proparallel <> 's');

-- Every object of the type has a comment.
SELECT p.oid::regprocedure AS uncommented
FROM pg_proc p
WHERE p.pronamespace = 'tide'::regnamespace
  AND (p.proargtypes::regtype[] && ARRAY['tide.gpumask'::regtype]
       OR p.prorettype = 'tide.gpumask'::regtype)
  AND obj_description(p.oid, 'pg_proc') IS NULL;
SELECT o.oid::regoperator AS uncommented
FROM pg_operator o
WHERE o.oprleft = 'tide.gpumask'::regtype
  AND obj_description(o.oid, 'pg_operator') IS NULL;
SELECT obj_description('tide.gpumask'::regtype, 'pg_type') IS NOT NULL AS type_commented;

--
-- Valid literals: the canonical output, and that it reads back equal.
--
SELECT replace(replace(lit, E'\t', '\t'), E'\n', '\n') AS lit, lit::gpumask AS mask, lit::gpumask::text::gpumask = lit::gpumask AS reads_back
FROM (VALUES
    (''),
    (' '),
    (E'\t\n '),
    ('0'),
    ('7'),
    ('63'),
    ('0,1'),
    ('1,0'),
    ('0-1'),
    ('0-2'),
    ('0,1,2'),
    ('2,1,0'),
    ('0-3,6'),
    ('6,0-3'),
    ('3,1,2'),
    ('0-3,5-7'),
    ('0-3,4-7'),
    ('0-7'),
    ('0-63'),
    ('63-63'),
    ('5-5'),
    ('62,63'),
    ('61-63'),
    ('0,2,4,6'),
    ('1,1,1'),
    ('0-5,2-3'),
    ('0-4,3-8'),
    ('0-1,3-4,6-8'),
    (' 0 - 3 , 6 '),
    (E'1,\t2'),
    ('00'),
    ('007'),
    ('0000000000000000000000063'),
    ('10-12,20,21,30-39'),
    ('0,2-4,6,8-63')
) AS v(lit);

--
-- Invalid literals: every error names the bad element.
--
-- reversed range
SELECT '3-1'::gpumask;
SELECT '0,63-62'::gpumask;
-- negative index
SELECT '-1'::gpumask;
SELECT '1,-2'::gpumask;
SELECT '1--2'::gpumask;
SELECT '- 3'::gpumask;
-- range without an end or a start
SELECT '3-'::gpumask;
SELECT '3 - ,4'::gpumask;
SELECT '-'::gpumask;
-- non-digits
SELECT 'a'::gpumask;
SELECT '1x'::gpumask;
SELECT '0x1'::gpumask;
SELECT '+1'::gpumask;
SELECT '1.5'::gpumask;
SELECT '1 2'::gpumask;
SELECT '1-2-3'::gpumask;
SELECT '1;2'::gpumask;
SELECT 'gpu0'::gpumask;
SELECT '{1,2}'::gpumask;
SELECT '１'::gpumask;
SELECT '1-x'::gpumask;
-- empty elements
SELECT ','::gpumask;
SELECT '1,,2'::gpumask;
SELECT '1,'::gpumask;
SELECT ',1'::gpumask;
SELECT '1, ,2'::gpumask;
-- index above 63
SELECT '64'::gpumask;
SELECT '0-64'::gpumask;
SELECT '1,2,100'::gpumask;
SELECT '70-3'::gpumask;
SELECT '2147483647'::gpumask;
-- numbers too large to read
SELECT '2147483648'::gpumask;
SELECT '99999999999999999999999'::gpumask;
SELECT '1-99999999999999999999999'::gpumask;
-- the first bad element is the one reported
SELECT '1,x,-1,99'::gpumask;

-- SQLSTATEs: syntax errors, the 0..63 limit, overflow.
DO $$
DECLARE
    lit text;
BEGIN
    FOREACH lit IN ARRAY ARRAY['3-1', '-1', '1,,2', 'x', '3-', '64', '99999999999']
    LOOP
        BEGIN
            PERFORM lit::tide.gpumask;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE '% -> %', lit, SQLSTATE;
        END;
    END LOOP;
END
$$;

--
-- Operators.
--
SELECT a, b,
       a | b AS "union", a & b AS "intersection", a - b AS "difference",
       a = b AS eq, a <> b AS ne, a @> b AS contains, a <@ b AS contained,
       a && b AS overlaps
FROM (VALUES
    (''::gpumask, ''::gpumask),
    ('', '0'),
    ('0-3', '2-5'),
    ('0-3', '1,2'),
    ('1,2', '0-3'),
    ('0-3', '4-7'),
    ('0-63', '63'),
    ('63', '0-63'),
    ('5', '5'),
    ('0,2,4', '4,2,0')
) AS v(a, b);

-- The order: the unsigned value of the bitmap; bit 63 sorts last.
SELECT a, b, a < b AS lt, a <= b AS le, a > b AS gt, a >= b AS ge,
       gpumask_cmp(a, b) AS cmp
FROM (VALUES
    (''::gpumask, '0'::gpumask),
    ('0', '1'),
    ('1', '0,1'),
    ('62', '63'),
    ('0-62', '63'),
    ('63', '0-63'),
    ('7', '7')
) AS v(a, b);

-- NULLs propagate (every function is strict).
SELECT NULL::gpumask | '1', '1'::gpumask && NULL, gpu_count(NULL), cuda_visible_devices(NULL);

-- Operator metadata: commutators, negators, estimators.
SELECT oprname, oprcom::regoperator AS commutator, oprnegate::regoperator AS negator,
       oprrest, oprjoin, oprcanhash, oprcanmerge
FROM pg_operator
WHERE oprleft = 'tide.gpumask'::regtype
ORDER BY oprname;

--
-- Functions.
--
SELECT m, gpu_count(m), cuda_visible_devices(m), gpu_indices(m),
       gpumask(gpu_indices(m)) = m AS array_round_trip
FROM (VALUES (''::gpumask), ('0'), ('0-3'), ('0-3,6'), ('1,3,5'), ('62,63'), ('0-63')) AS v(m);

SELECT gpumask(ARRAY[]::int[]);
SELECT gpumask(ARRAY[3, 1, 2, 2]);
SELECT gpumask('{0,63}'::int[]);
-- gpumask(unknown literal) is the function-style cast from text, not the array form.
SELECT gpumask('0-3');
SELECT gpumask(ARRAY[1, NULL]);
SELECT gpumask(ARRAY[-1]);
SELECT gpumask(ARRAY[64]);
SELECT gpumask(ARRAY[[1, 2], [3, 4]]);
SELECT pg_typeof(gpu_indices('1')), gpu_indices('') = '{}'::int[] AS empty_array;

--
-- btree and hash operator classes: ORDER BY, DISTINCT, GROUP BY, indexes.
--
CREATE TABLE gm (id int, m gpumask);
INSERT INTO gm
SELECT i, gpumask(ARRAY[i % 8, (i * 7) % 64])
FROM generate_series(1, 2000) AS i;
INSERT INTO gm VALUES (0, ''), (-1, '63'), (-2, '0-63'), (-3, NULL);
ANALYZE gm;

SELECT m FROM gm WHERE id <= 10 OR id < 0 ORDER BY m, id;
SELECT m FROM gm WHERE id <= 10 OR id < 0 ORDER BY m DESC NULLS LAST, id;
SELECT count(DISTINCT m) AS distinct_masks, count(*) AS rows FROM gm;

SET enable_hashagg = on;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT m, count(*) FROM gm GROUP BY m;
SELECT m, count(*) FROM gm WHERE m <@ '0-7' GROUP BY m ORDER BY m;
RESET enable_sort;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT m, count(*) FROM gm GROUP BY m;
SELECT m, count(*) FROM gm WHERE m <@ '0-7' GROUP BY m ORDER BY m;
RESET enable_hashagg;

-- Hash and merge joins on =.
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gm a JOIN gm b ON a.m = b.m;
SELECT count(*) FROM gm a JOIN gm b ON a.m = b.m;
SET enable_hashjoin = off;
SET enable_mergejoin = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gm a JOIN gm b ON a.m = b.m;
SELECT count(*) FROM gm a JOIN gm b ON a.m = b.m;
RESET enable_nestloop;
RESET enable_mergejoin;
RESET enable_hashjoin;

-- A btree index, used with seqscan off, for equality and range.
CREATE INDEX gm_m_btree ON gm (m);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), min(id), max(id) FROM gm WHERE m = '1,7';
SELECT count(*), min(id), max(id) FROM gm WHERE m = '1,7';
EXPLAIN (COSTS OFF) SELECT m FROM gm WHERE m >= '62' ORDER BY m;
SELECT DISTINCT m FROM gm WHERE m >= '62' ORDER BY m;
SELECT DISTINCT m FROM gm WHERE m < '3' ORDER BY m;
RESET enable_bitmapscan;
DROP INDEX gm_m_btree;

-- A hash index.
CREATE INDEX gm_m_hash ON gm USING hash (m);
EXPLAIN (COSTS OFF) SELECT count(*), min(id), max(id) FROM gm WHERE m = '1,7';
SELECT count(*), min(id), max(id) FROM gm WHERE m = '1,7';
RESET enable_seqscan;
DROP INDEX gm_m_hash;

-- A unique constraint and hash partitioning (extended hash).
CREATE TABLE gm_unique (m gpumask PRIMARY KEY);
INSERT INTO gm_unique VALUES ('0-3'), ('4-7');
INSERT INTO gm_unique VALUES ('3,0,1,2');
CREATE TABLE gm_part (m gpumask) PARTITION BY HASH (m);
CREATE TABLE gm_part_0 PARTITION OF gm_part FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE gm_part_1 PARTITION OF gm_part FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO gm_part SELECT DISTINCT m FROM gm WHERE m IS NOT NULL;
SELECT (SELECT count(*) FROM gm_part_0) > 0 AS p0_used,
       (SELECT count(*) FROM gm_part_1) > 0 AS p1_used,
       (SELECT count(*) FROM gm_part) = (SELECT count(DISTINCT m) FROM gm) AS all_rows;
DROP TABLE gm_unique, gm_part;

--
-- The aggregate tide.union.
--
SELECT tide.union(m) FROM gm WHERE id BETWEEN 1 AND 4;
SELECT tide.union(m) FROM gm;
SELECT tide.union(m) FROM gm WHERE false;
SELECT tide.union(m) FROM gm WHERE m IS NULL;
SELECT id % 2 AS parity, tide.union(m) FROM gm WHERE id > 0 GROUP BY 1 ORDER BY 1;
-- Under a forced parallel plan: partial aggregates combined.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT tide.union(m) FROM gm WHERE id > 0;
SELECT tide.union(m) FROM gm WHERE id > 0;
SELECT tide.union(m) FROM gm WHERE id > 0 AND m <@ '0-7';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET parallel_leader_participation;

--
-- Binary COPY round trip (through a client-side file in results/).
--
CREATE TABLE gm_copy (id int, m gpumask);
INSERT INTO gm_copy VALUES (1, ''), (2, '0'), (3, '63'), (4, '0-63'), (5, '0-3,6'),
    (6, '1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47,49,51,53,55,57,59,61,63'),
    (7, NULL);
\copy gm_copy TO 'results/gpumask.bin' WITH (FORMAT binary)
CREATE TABLE gm_copy2 (LIKE gm_copy);
\copy gm_copy2 FROM 'results/gpumask.bin' WITH (FORMAT binary)
SELECT id, m FROM gm_copy2 ORDER BY id;
SELECT count(*) AS mismatches
FROM gm_copy a FULL JOIN gm_copy2 b USING (id)
WHERE a.m IS DISTINCT FROM b.m;
-- The wire form is the bitmap as a big-endian int8.
SELECT m, gpumask_send(m) FROM gm_copy WHERE id <= 5 ORDER BY id;

DROP TABLE gm, gm_copy, gm_copy2;

--
-- Without tide on the search_path: operators need OPERATOR(tide.x);
-- operator classes (DISTINCT, ORDER BY, GROUP BY) work regardless.
--
SET search_path = pg_catalog, pg_temp;
SELECT '0-3'::tide.gpumask OPERATOR(tide.&&) '3-5' AS overlaps,
       '0-3'::tide.gpumask OPERATOR(tide.=) '3,2,1,0' AS eq;
SELECT DISTINCT m FROM (VALUES ('1'::tide.gpumask), ('1'), ('0')) AS v(m) ORDER BY m;
SELECT '1'::tide.gpumask IS DISTINCT FROM '2'::tide.gpumask;
RESET search_path;
