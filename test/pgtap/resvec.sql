-- pgTAP: tide.resvec behaviour as assertions.
BEGIN;
CREATE EXTENSION pg_tide;
SELECT plan(61);

-- The public surface of the type (docs/resvec.md).
SELECT has_type('tide', 'resvec', 'type tide.resvec exists');
SELECT has_function('tide', 'get', ARRAY['tide.resvec', 'text'], 'tide.get(resvec, text) exists');
SELECT function_returns('tide', 'get', ARRAY['tide.resvec', 'text'], 'numeric', 'tide.get returns numeric');
SELECT has_function('tide', 'sum', ARRAY['tide.resvec'], 'aggregate tide.sum(resvec) exists');
SELECT is_aggregate('tide', 'sum', ARRAY['tide.resvec'], 'tide.sum is an aggregate');
SELECT has_operator('tide.resvec', 'tide', '+', 'tide.resvec', 'tide.resvec', 'resvec + resvec');
SELECT has_operator('tide.resvec', 'tide', '-', 'tide.resvec', 'tide.resvec', 'resvec - resvec');
SELECT has_operator('tide.resvec', 'tide', '*', 'numeric', 'tide.resvec', 'resvec * numeric');
SELECT has_operator('numeric', 'tide', '*', 'tide.resvec', 'tide.resvec', 'numeric * resvec');
SELECT has_operator('tide.resvec', 'tide', '*', 'integer', 'tide.resvec', 'resvec * integer');
SELECT has_operator('tide.resvec', 'tide', '=', 'tide.resvec', 'boolean', 'resvec = resvec');
SELECT has_operator('tide.resvec', 'tide', '<>', 'tide.resvec', 'boolean', 'resvec <> resvec');
SELECT has_operator('tide.resvec', 'tide', '@>', 'tide.resvec', 'boolean', 'resvec @> resvec');
SELECT has_operator('tide.resvec', 'tide', '<@', 'tide.resvec', 'boolean', 'resvec <@ resvec');
SELECT hasnt_operator('tide.resvec', 'tide', '<', 'tide.resvec', 'boolean',
                      'no < on resvec: "fits in" is <@, sort order is ~<~');
SELECT has_cast('tide.resvec', 'jsonb', 'cast resvec -> jsonb');
SELECT has_cast('jsonb', 'tide.resvec', 'cast jsonb -> resvec');
SELECT volatility_is('tide', 'get', ARRAY['tide.resvec', 'text'], 'immutable', 'tide.get is immutable');
SELECT is_strict('tide', 'get', ARRAY['tide.resvec', 'text'], 'tide.get is strict');

-- pgTAP's is() compares with =, found through the search path.
SET LOCAL search_path = public, tide;

-- Text I/O.
SELECT is('cpu=4, memory=16Gi, gpu=2, NVIDIA-H200=2'::tide.resvec::text,
          'NVIDIA-H200=2, cpu=4, gpu=2, memory=17179869184', 'contract example, canonical');
SELECT is(''::tide.resvec::text, '', 'empty vector');
SELECT is('cpu=0, gpu=1'::tide.resvec::text, 'gpu=1', 'zero components vanish');
SELECT is('x=500m'::tide.resvec::text, 'x=0.5', 'milli suffix');
SELECT is('x=0.5Ki'::tide.resvec::text, 'x=512', 'fractional binary suffix, exact');
SELECT is('x=2k, y=2Ki'::tide.resvec::text, 'x=2000, y=2048', 'k is 1000, Ki is 1024');
SELECT throws_ok($$SELECT 'cpu=4Qi'::tide.resvec$$, '22P02',
                 'invalid quantity "4Qi" for resource "cpu"', 'unknown suffix');
SELECT throws_ok($$SELECT 'cpu=-1'::tide.resvec$$, '22P02',
                 'invalid quantity "-1" for resource "cpu"', 'negative');
SELECT throws_ok($$SELECT 'cpu=1.0005'::tide.resvec$$, '22P02',
                 'invalid quantity "1.0005" for resource "cpu"', 'more than milli precision');
SELECT throws_ok($$SELECT 'cpu=0.5m'::tide.resvec$$, '22P02',
                 'invalid quantity "0.5m" for resource "cpu"', 'half a milli');
SELECT throws_ok($$SELECT 'gpu=1, gpu=2'::tide.resvec$$, '22P02',
                 'duplicate resource name "gpu"', 'duplicate');
SELECT throws_ok($$SELECT 'cpu=10P'::tide.resvec$$, '22003',
                 'quantity "10P" for resource "cpu" is out of range', 'overflow');
SELECT throws_ok($$SELECT 'cpu'::tide.resvec$$, '22P02',
                 'missing "=" after resource name "cpu"', 'missing =');
SELECT throws_ok($$SELECT '=4'::tide.resvec$$, '22P02',
                 'missing resource name before "=4"', 'empty name');
SELECT throws_ok($$SELECT 'cpu=1,'::tide.resvec$$, '22P02',
                 'invalid input syntax for type resvec: "cpu=1,"', 'trailing comma');
SELECT throws_ok($$SELECT repeat('a', 64) || '=1'::text::tide.resvec$$, NULL, NULL,
                 'a 64-byte name is refused');

-- Arithmetic.
SELECT is('cpu=4, gpu=2'::tide.resvec OPERATOR(tide.+) 'cpu=0.5, rdma=1',
          'cpu=4.5, gpu=2, rdma=1'::tide.resvec, '+ adds componentwise');
SELECT is('cpu=4, gpu=2'::tide.resvec OPERATOR(tide.-) 'gpu=2',
          'cpu=4'::tide.resvec, '- drops components that reach zero');
SELECT throws_ok($$SELECT 'cpu=4'::tide.resvec OPERATOR(tide.-) 'cpu=5'$$, '22003',
                 'resource "cpu" would go below zero', '- never goes below zero');
SELECT throws_ok($$SELECT 'cpu=4'::tide.resvec OPERATOR(tide.-) 'gpu=1'$$, '22003',
                 'resource "gpu" would go below zero', 'missing counts as zero in -');
SELECT throws_ok($$SELECT 'cpu=9223372036854775'::tide.resvec OPERATOR(tide.+) 'cpu=1'$$, '22003',
                 'quantity of resource "cpu" is out of range', '+ overflow is an error');
SELECT is('cpu=1.5'::tide.resvec OPERATOR(tide.*) 3, 'cpu=4.5'::tide.resvec, '* int');
SELECT is(0.5 OPERATOR(tide.*) 'cpu=1.5'::tide.resvec, 'cpu=0.75'::tide.resvec, 'numeric *');
SELECT is('cpu=0.001'::tide.resvec OPERATOR(tide.*) 0.5, 'cpu=0.001'::tide.resvec,
          '* rounds halves away from zero');
SELECT is('cpu=0.001'::tide.resvec OPERATOR(tide.*) 0.4, ''::tide.resvec,
          '* may round a component to zero, which vanishes');
SELECT throws_ok($$SELECT 'cpu=1'::tide.resvec OPERATOR(tide.*) -1$$, '22023',
                 'cannot multiply a resvec by a negative number', '* negative refused');

-- Comparisons.
SELECT ok('cpu=4, gpu=2'::tide.resvec OPERATOR(tide.@>) 'cpu=2', '@> when every component is enough');
SELECT ok(NOT ('cpu=4'::tide.resvec OPERATOR(tide.@>) 'cpu=2, gpu=1'), 'missing name is zero in @>');
SELECT ok('cpu=2'::tide.resvec OPERATOR(tide.<@) 'cpu=4, gpu=2', '<@ is @> reversed');
SELECT ok(''::tide.resvec OPERATOR(tide.<@) 'cpu=1', 'empty fits anywhere');
SELECT ok('cpu=1, gpu=1'::tide.resvec OPERATOR(tide.=) 'gpu=1000m, cpu=1', '= ignores input order and units');
SELECT ok('cpu=1'::tide.resvec OPERATOR(tide.<>) 'cpu=1, gpu=1', '<> differs');

-- Functions.
SELECT is(tide.get('memory=16Gi', 'memory'), 17179869184::numeric, 'get');
SELECT is(tide.get('cpu=0.25', 'cpu'), 0.25, 'get fraction');
SELECT is(tide.get('cpu=1', 'gpu'), 0::numeric, 'get missing is 0');
SELECT is(tide.resvec_names('b=1, a=1'), ARRAY['a', 'b'], 'resvec_names sorted');
SELECT results_eq($$SELECT name, quantity FROM tide.each('gpu=0.5, cpu=2')$$,
                  $$VALUES ('cpu'::text, 2::numeric), ('gpu', 0.5)$$, 'each');
SELECT is((SELECT tide.sum(r) FROM (VALUES ('cpu=1'::tide.resvec), ('cpu=2, gpu=1')) v(r)),
          'cpu=3, gpu=1'::tide.resvec, 'sum');
SELECT is((SELECT tide.sum(r) FROM (VALUES ('cpu=1'::tide.resvec)) v(r) WHERE false),
          NULL::tide.resvec, 'sum of no rows is NULL');
SELECT is('{"cpu": 4, "memory": "16Gi"}'::jsonb::tide.resvec, 'cpu=4, memory=16Gi'::tide.resvec,
          'jsonb -> resvec');
SELECT is('cpu=4, memory=16Gi'::tide.resvec::jsonb, '{"cpu": 4, "memory": 17179869184}'::jsonb,
          'resvec -> jsonb (contract example)');
SELECT throws_ok($$SELECT '{"cpu": true}'::jsonb::tide.resvec$$, '22023',
                 'invalid value for resource "cpu" in jsonb', 'jsonb boolean refused');

SELECT * FROM finish();
ROLLBACK;
