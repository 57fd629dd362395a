-- tide.resvec: text input and output, valid and invalid literals.
SET search_path = tide, public;

-- Report an input error as one line: SQLSTATE, message, detail.
CREATE FUNCTION pg_temp.try(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    msg text; det text; st text;
BEGIN
    RETURN t::tide.resvec::text;
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, st = RETURNED_SQLSTATE;
    RETURN st || ' ' || msg || coalesce(' | ' || nullif(det, ''), '');
END $$;

-- Valid literals and their canonical text; every output reads back equal.
SELECT replace(replace(quote_literal(x), E'\n', '\n'), E'\t', '\t') AS literal,
       x::tide.resvec AS canonical,
       x::tide.resvec::text::tide.resvec = x::tide.resvec AS reads_back
FROM (VALUES
    (''), ('   '), (E'\t\n'),
    ('cpu=4'), (' cpu = 4 '), ('cpu=4,gpu=2'), ('gpu=2, cpu=4'),
    ('cpu=4, memory=16Gi, gpu=2, NVIDIA-H200=2'),
    ('cpu=0'), ('cpu=0, gpu=1'), ('cpu=0.000'), ('cpu=0m'),
    ('cpu=500m'), ('cpu=1m'), ('cpu=1000m'), ('cpu=1500m'),
    ('cpu=0.5'), ('cpu=0.25'), ('cpu=0.125'), ('cpu=1.5000'), ('cpu=007'),
    ('x=1k'), ('x=1M'), ('x=1G'), ('x=1T'), ('x=1P'),
    ('x=1Ki'), ('x=1Mi'), ('x=1Gi'), ('x=1Ti'), ('x=1Pi'),
    ('x=0.5Ki'), ('x=0.5Gi'), ('x=1.5Gi'), ('x=0.001Ki'), ('x=0.0005Ki'),
    ('x=0.000001k'), ('x=1.5k'), ('x=8Pi'),
    ('x=9223372036854775.807'), ('x=9223372036854775807m'), ('x=9.223372036854775807P'),
    ('nvidia.com/gpu=1'), ('a_b=1, a-b=2, a.b=3'), ('A=1, a=2, B=3, b=4'),
    ('ab=1, a=1'), (E'cpu=\t4\t,\tgpu=1'), (E'cpu\n=\n4'),
    ('abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk=1'),
    ('m=1m'), ('Gi=1Gi'), ('0=1'), ('-=1')
) AS v(x);

-- Invalid literals: SQLSTATE, message, detail.
SELECT quote_literal(x) AS literal, pg_temp.try(x) AS error
FROM (VALUES
    (','), (',cpu=1'), ('cpu=1,'), ('cpu=1, '), ('cpu=1,,gpu=1'), ('cpu=1, ,gpu=1'),
    ('=4'), ('cpu=1, =4'),
    ('cp*u=4'), ('cpu!=4'), ('"cpu"=4'), ('c:pu=4'), ('cé=4'), ('cpu 4'), ('cpu'), ('cpu '),
    ('abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl=1'),
    ('cpu='), ('cpu= '), ('cpu=,gpu=1'),
    ('cpu=4 gpu=2'), ('cpu=4 Gi'), ('cpu=4;gpu=2'),
    ('cpu=abc'), ('cpu=.5'), ('cpu=4.'), ('cpu=+4'), ('cpu=1.5.5'), ('cpu==4'),
    ('cpu=4=5'), ('cpu=1_000'), ('cpu=NaN'), ('cpu=Infinity'),
    ('cpu=4Qi'), ('cpu=4K'), ('cpu=4ki'), ('cpu=4mi'), ('cpu=4Gib'), ('cpu=4GB'),
    ('cpu=1e3'), ('cpu=0x10'), ('cpu=4u'),
    ('cpu=-1'), ('cpu=-0'), ('cpu=-1Gi'),
    ('cpu=1.0005'), ('cpu=0.0001'), ('cpu=0.5m'), ('cpu=1.1m'), ('cpu=0.0001Ki'),
    ('cpu=0.1234567890123456789'),
    ('cpu=9223372036854775.808'), ('cpu=9223372036854776'), ('cpu=9223372036854775808m'),
    ('cpu=99999999999999999999999'), ('cpu=9224P'), ('cpu=9Pi'), ('cpu=9.223372036854775808P'),
    ('cpu=1, cpu=2'), ('cpu=0, cpu=0'), ('a=1, b=1, a=1'),
    (E'cpu=1\x01'), (E'c\tp=1')
) AS v(x);

-- A few errors in full, with their hints.
SELECT 'cpu=4Qi'::tide.resvec;
SELECT 'cpu=-1'::tide.resvec;
SELECT 'cpu=1.0005'::tide.resvec;
SELECT 'cpu=9223372036854776'::tide.resvec;
SELECT 'cpu=1, cpu=2'::tide.resvec;
SELECT 'cpu 4'::tide.resvec;
SELECT 'cpu=4,'::tide.resvec;
SELECT 'cpu=4 gpu=2'::tide.resvec;
SELECT 'c$u=4'::tide.resvec;
SELECT 'cpu='::tide.resvec;
SELECT 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl=1'::tide.resvec;

-- Error codes: syntax is 22P02, overflow 22003, long names 54000.
DO $$
BEGIN
    PERFORM 'cpu=9Pi'::tide.resvec;
EXCEPTION WHEN numeric_value_out_of_range THEN RAISE NOTICE 'overflow: 22003';
END $$;
DO $$
BEGIN
    PERFORM 'cpu=4Qi'::tide.resvec;
EXCEPTION WHEN invalid_text_representation THEN RAISE NOTICE 'bad suffix: 22P02';
END $$;
