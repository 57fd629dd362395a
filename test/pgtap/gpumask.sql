-- tide.gpumask as assertions: the type's catalog shape, its algebra laws,
-- the functions a launcher and the scheduler rely on, and the error codes.
BEGIN;
CREATE EXTENSION pg_tide;
-- pgTAP lives in public; tide's operators are found through the path, as a
-- user who works with pg_tide would set it.
SET LOCAL search_path = public, tide;
SELECT plan(52);

-- Catalog shape.
SELECT has_type('tide', 'gpumask', 'type tide.gpumask exists');
SELECT is((SELECT typlen::int FROM pg_type WHERE oid = 'tide.gpumask'::regtype), 8,
          'gpumask is 8 bytes');
SELECT ok((SELECT typbyval FROM pg_type WHERE oid = 'tide.gpumask'::regtype),
          'gpumask is passed by value');
SELECT is((SELECT typalign FROM pg_type WHERE oid = 'tide.gpumask'::regtype), 'd',
          'gpumask is double-aligned');
SELECT has_function('tide', 'gpu_count', ARRAY['gpumask'], 'tide.gpu_count(gpumask) exists');
SELECT function_returns('tide', 'gpu_count', ARRAY['gpumask'], 'integer');
SELECT function_returns('tide', 'cuda_visible_devices', ARRAY['gpumask'], 'text');
SELECT function_returns('tide', 'gpu_indices', ARRAY['gpumask'], 'integer[]');
SELECT function_returns('tide', 'gpumask', ARRAY['integer[]'], 'gpumask');
SELECT is_aggregate('tide', 'union', ARRAY['gpumask'], 'tide.union(gpumask) is an aggregate');
SELECT volatility_is('tide', 'gpu_count', ARRAY['gpumask'], 'immutable');
SELECT is_strict('tide', 'cuda_visible_devices', ARRAY['gpumask']);
SELECT ok(EXISTS (SELECT FROM pg_operator WHERE oprname = '|' AND oprleft = 'tide.gpumask'::regtype
                 AND oprresult = 'tide.gpumask'::regtype), 'operator | exists');
SELECT ok(EXISTS (SELECT FROM pg_operator WHERE oprname = '&&' AND oprleft = 'tide.gpumask'::regtype
                 AND oprcom <> 0), 'operator && exists and is its own commutator');
SELECT has_opclass('tide', 'gpumask_ops', 'btree operator class exists');
SELECT has_opclass('tide', 'gpumask_hash_ops', 'hash operator class exists');

-- Text form.
SELECT is('0-3,6'::tide.gpumask::text, '0-3,6', 'the contract example reads back as written');
SELECT is(''::tide.gpumask::text, '', 'the empty string is the empty mask');
SELECT is('3,1,2'::tide.gpumask::text, '1-3', 'sets are unordered; three in a row become a range');
SELECT is('0-1'::tide.gpumask::text, '0,1', 'a run of two is written as a list');
SELECT is(' 0 - 3 , 6 '::tide.gpumask, '0-3,6'::tide.gpumask, 'whitespace is ignored');
SELECT is('0-5,2-3,5'::tide.gpumask, '0-5'::tide.gpumask, 'overlaps and duplicates are accepted');

-- Errors: SQLSTATE and message.
SELECT throws_ok($$SELECT '3-1'::tide.gpumask$$, '22P02',
    'invalid input syntax for type gpumask: "3-1"', 'a reversed range is a syntax error');
SELECT throws_ok($$SELECT '1,,2'::tide.gpumask$$, '22P02',
    'invalid input syntax for type gpumask: "1,,2"', 'an empty element is a syntax error');
SELECT throws_ok($$SELECT '1,'::tide.gpumask$$, '22P02',
    'invalid input syntax for type gpumask: "1,"', 'a trailing comma is a syntax error');
SELECT throws_ok($$SELECT '-2'::tide.gpumask$$, '22P02',
    'invalid input syntax for type gpumask: "-2"', 'a negative index is a syntax error');
SELECT throws_ok($$SELECT '64'::tide.gpumask$$, '54000',
    'GPU index 64 is out of range for type gpumask', 'index 64 is beyond the limit');
SELECT throws_ok($$SELECT '99999999999999999999'::tide.gpumask$$, '22003',
    'value out of range for type gpumask: "99999999999999999999"', 'an overlong number is out of range');
SELECT throws_ok($$SELECT tide.gpumask(ARRAY[64])$$, '54000',
    'GPU index 64 is out of range for type gpumask', 'the array form has the same limit');
SELECT throws_ok($$SELECT tide.gpumask(ARRAY[NULL::int])$$, '22004',
    'array of GPU indices must not contain nulls', 'the array form rejects nulls');

-- Set algebra laws on a spread of masks.
CREATE TEMP TABLE m AS
SELECT v::tide.gpumask AS m
FROM unnest(ARRAY['', '0', '63', '0-3', '2-5', '0-63', '1,3,5,7', '0,62,63', '8-15,40']) AS v;
SELECT is((SELECT count(*)::int FROM m a, m b WHERE NOT (a.m | b.m = b.m | a.m)), 0,
          'union is commutative');
SELECT is((SELECT count(*)::int FROM m a, m b WHERE NOT (a.m & b.m = b.m & a.m)), 0,
          'intersection is commutative');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE NOT ((a.m - b.m) | (a.m & b.m) = a.m)), 0,
          'a = (a - b) | (a & b)');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m - b.m) && b.m), 0,
          'a - b shares nothing with b');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m @> b.m) <> (a.m & b.m = b.m)), 0,
          'a @> b exactly when a & b = b');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m <@ b.m) <> (b.m @> a.m)), 0,
          '<@ is the commutator of @>');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m && b.m) <> (tide.gpu_count(a.m & b.m) > 0)), 0,
          'a && b exactly when they share a GPU');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE tide.gpu_count(a.m | b.m)
                 <> tide.gpu_count(a.m) + tide.gpu_count(b.m) - tide.gpu_count(a.m & b.m)), 0,
          'inclusion-exclusion holds for gpu_count');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m = b.m) <> (a.m::text = b.m::text)), 0,
          'equal masks have equal canonical text');
SELECT is((SELECT count(*)::int FROM m a, m b
           WHERE (a.m < b.m) = (b.m <= a.m)), 0,
          'the order is total: exactly one of a < b and b <= a');
SELECT is((SELECT count(*)::int FROM m a
           WHERE a.m::text::tide.gpumask <> a.m), 0,
          'every mask reads back equal from its text');
SELECT is((SELECT count(*)::int FROM m a
           WHERE tide.gpumask(tide.gpu_indices(a.m)) <> a.m), 0,
          'gpumask(gpu_indices(m)) = m');
SELECT is((SELECT count(*)::int FROM m a
           WHERE tide.cuda_visible_devices(a.m)::tide.gpumask <> a.m), 0,
          'the CUDA_VISIBLE_DEVICES list parses back to the same mask');

-- What launchers and the scheduler use.
SELECT is(tide.cuda_visible_devices('0-3'), '0,1,2,3', 'cuda_visible_devices of 0-3');
SELECT is(tide.cuda_visible_devices(''), '', 'cuda_visible_devices of the empty mask is empty');
SELECT is(tide.cuda_visible_devices('63,1,10'), '1,10,63', 'cuda_visible_devices is ascending');
SELECT is(tide.gpu_count('0-3,6'), 5, 'gpu_count of 0-3,6');
SELECT is(tide.gpu_count('0-63'), 64, 'gpu_count of every GPU');
SELECT is(tide.gpu_indices('6,0-2'), ARRAY[0, 1, 2, 6], 'gpu_indices is ascending');
SELECT is((SELECT tide.union(m) FROM m), '0-63'::tide.gpumask, 'union of all test masks');
SELECT is((SELECT tide.union(m) FROM m WHERE false), ''::tide.gpumask, 'union over no rows is empty, not NULL');
SELECT is((SELECT tide.union(m) FROM (VALUES ('0-1'::tide.gpumask), (NULL), ('4')) v(m)),
          '0,1,4'::tide.gpumask, 'union skips NULLs');

SELECT * FROM finish();
ROLLBACK;
