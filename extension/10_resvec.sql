-- tide.resvec: a resource vector, sorted unique (name, milli-quantity) pairs.
-- See docs/resvec.md.  C code: src/resvec.c over src/core/resvec_core.c.

CREATE TYPE tide.resvec;

CREATE FUNCTION tide.resvec_in(cstring) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_in'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_out(tide.resvec) RETURNS cstring
    AS 'MODULE_PATHNAME', 'resvec_out'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_recv(internal) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_recv'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_send(tide.resvec) RETURNS bytea
    AS 'MODULE_PATHNAME', 'resvec_send'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE tide.resvec (
    INPUT = tide.resvec_in,
    OUTPUT = tide.resvec_out,
    RECEIVE = tide.resvec_recv,
    SEND = tide.resvec_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = double,
    STORAGE = extended
);

COMMENT ON TYPE tide.resvec IS
    'resource vector: name=quantity pairs exact to 0.001, e.g. ''cpu=4, memory=16Gi, gpu=2''';
COMMENT ON FUNCTION tide.resvec_in(cstring) IS 'text input of tide.resvec';
COMMENT ON FUNCTION tide.resvec_out(tide.resvec) IS 'canonical text output of tide.resvec (sorted, plain units)';
COMMENT ON FUNCTION tide.resvec_recv(internal) IS 'binary input of tide.resvec (validated like text input)';
COMMENT ON FUNCTION tide.resvec_send(tide.resvec) IS 'binary output of tide.resvec';

-- Arithmetic --------------------------------------------------------------

CREATE FUNCTION tide.resvec_add(tide.resvec, tide.resvec) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_add'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_sub(tide.resvec, tide.resvec) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_sub'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_mul(tide.resvec, numeric) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_mul_numeric'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_mul(numeric, tide.resvec) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_numeric_mul'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_mul(tide.resvec, integer) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_mul_int4'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_mul(integer, tide.resvec) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_int4_mul'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tide.resvec_add(tide.resvec, tide.resvec) IS
    'componentwise sum (error on overflow); implements + and tide.sum';
COMMENT ON FUNCTION tide.resvec_sub(tide.resvec, tide.resvec) IS
    'componentwise difference; error naming the resource that would go below zero';
COMMENT ON FUNCTION tide.resvec_mul(tide.resvec, numeric) IS
    'scale by a non-negative number, each component rounded to 0.001 (halves away from zero)';
COMMENT ON FUNCTION tide.resvec_mul(numeric, tide.resvec) IS
    'scale by a non-negative number, each component rounded to 0.001 (halves away from zero)';
COMMENT ON FUNCTION tide.resvec_mul(tide.resvec, integer) IS
    'scale by a non-negative integer, exactly';
COMMENT ON FUNCTION tide.resvec_mul(integer, tide.resvec) IS
    'scale by a non-negative integer, exactly';

CREATE OPERATOR tide.+ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec,
    FUNCTION = tide.resvec_add, COMMUTATOR = OPERATOR(tide.+)
);
CREATE OPERATOR tide.- (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec,
    FUNCTION = tide.resvec_sub
);
CREATE OPERATOR tide.* (
    LEFTARG = tide.resvec, RIGHTARG = numeric,
    FUNCTION = tide.resvec_mul, COMMUTATOR = OPERATOR(tide.*)
);
CREATE OPERATOR tide.* (
    LEFTARG = numeric, RIGHTARG = tide.resvec,
    FUNCTION = tide.resvec_mul, COMMUTATOR = OPERATOR(tide.*)
);
CREATE OPERATOR tide.* (
    LEFTARG = tide.resvec, RIGHTARG = integer,
    FUNCTION = tide.resvec_mul, COMMUTATOR = OPERATOR(tide.*)
);
CREATE OPERATOR tide.* (
    LEFTARG = integer, RIGHTARG = tide.resvec,
    FUNCTION = tide.resvec_mul, COMMUTATOR = OPERATOR(tide.*)
);

COMMENT ON OPERATOR tide.+ (tide.resvec, tide.resvec) IS 'componentwise sum';
COMMENT ON OPERATOR tide.- (tide.resvec, tide.resvec) IS 'componentwise difference (never below zero)';
COMMENT ON OPERATOR tide.* (tide.resvec, numeric) IS 'scale, rounded to 0.001';
COMMENT ON OPERATOR tide.* (numeric, tide.resvec) IS 'scale, rounded to 0.001';
COMMENT ON OPERATOR tide.* (tide.resvec, integer) IS 'scale by an integer';
COMMENT ON OPERATOR tide.* (integer, tide.resvec) IS 'scale by an integer';

-- Comparison --------------------------------------------------------------

CREATE FUNCTION tide.resvec_eq(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_eq' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_ne(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_lt(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_le(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_gt(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_ge(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_cmp(tide.resvec, tide.resvec) RETURNS integer
    AS 'MODULE_PATHNAME', 'resvec_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_hash(tide.resvec) RETURNS integer
    AS 'MODULE_PATHNAME', 'resvec_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_hash_extended(tide.resvec, bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'resvec_hash_extended' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_contains(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_contains' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_contained(tide.resvec, tide.resvec) RETURNS boolean
    AS 'MODULE_PATHNAME', 'resvec_contained' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tide.resvec_eq(tide.resvec, tide.resvec) IS 'equal (same components)';
COMMENT ON FUNCTION tide.resvec_ne(tide.resvec, tide.resvec) IS 'not equal';
COMMENT ON FUNCTION tide.resvec_lt(tide.resvec, tide.resvec) IS 'sort order only (not "fits in": use <@)';
COMMENT ON FUNCTION tide.resvec_le(tide.resvec, tide.resvec) IS 'sort order only (not "fits in": use <@)';
COMMENT ON FUNCTION tide.resvec_gt(tide.resvec, tide.resvec) IS 'sort order only (not "holds": use @>)';
COMMENT ON FUNCTION tide.resvec_ge(tide.resvec, tide.resvec) IS 'sort order only (not "holds": use @>)';
COMMENT ON FUNCTION tide.resvec_cmp(tide.resvec, tide.resvec) IS 'btree support: total order by names, then quantities';
COMMENT ON FUNCTION tide.resvec_hash(tide.resvec) IS 'hash support';
COMMENT ON FUNCTION tide.resvec_hash_extended(tide.resvec, bigint) IS 'seeded 64-bit hash support';
COMMENT ON FUNCTION tide.resvec_contains(tide.resvec, tide.resvec) IS
    'a @> b: a holds at least b of every resource (missing = 0)';
COMMENT ON FUNCTION tide.resvec_contained(tide.resvec, tide.resvec) IS
    'a <@ b: a fits in b';

CREATE OPERATOR tide.= (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_eq,
    COMMUTATOR = OPERATOR(tide.=), NEGATOR = OPERATOR(tide.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR tide.<> (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_ne,
    COMMUTATOR = OPERATOR(tide.<>), NEGATOR = OPERATOR(tide.=),
    RESTRICT = neqsel, JOIN = neqjoinsel
);
-- The sort order is deliberately not spelled < and >: "a < b" would read
-- as "fits in", which is <@.
CREATE OPERATOR tide.~<~ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_lt,
    COMMUTATOR = OPERATOR(tide.~>~), NEGATOR = OPERATOR(tide.~>=~),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR tide.~<=~ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_le,
    COMMUTATOR = OPERATOR(tide.~>=~), NEGATOR = OPERATOR(tide.~>~),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR tide.~>~ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_gt,
    COMMUTATOR = OPERATOR(tide.~<~), NEGATOR = OPERATOR(tide.~<=~),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR tide.~>=~ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_ge,
    COMMUTATOR = OPERATOR(tide.~<=~), NEGATOR = OPERATOR(tide.~<~),
    RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR tide.@> (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_contains,
    COMMUTATOR = OPERATOR(tide.<@),
    RESTRICT = contsel, JOIN = contjoinsel
);
CREATE OPERATOR tide.<@ (
    LEFTARG = tide.resvec, RIGHTARG = tide.resvec, FUNCTION = tide.resvec_contained,
    COMMUTATOR = OPERATOR(tide.@>),
    RESTRICT = contsel, JOIN = contjoinsel
);

COMMENT ON OPERATOR tide.= (tide.resvec, tide.resvec) IS 'equal';
COMMENT ON OPERATOR tide.<> (tide.resvec, tide.resvec) IS 'not equal';
COMMENT ON OPERATOR tide.~<~ (tide.resvec, tide.resvec) IS 'sorts before (an arbitrary total order for ORDER BY, DISTINCT and indexes)';
COMMENT ON OPERATOR tide.~<=~ (tide.resvec, tide.resvec) IS 'sorts before or equal';
COMMENT ON OPERATOR tide.~>~ (tide.resvec, tide.resvec) IS 'sorts after';
COMMENT ON OPERATOR tide.~>=~ (tide.resvec, tide.resvec) IS 'sorts after or equal';
COMMENT ON OPERATOR tide.@> (tide.resvec, tide.resvec) IS 'holds at least (every component of the right is at most the left''s)';
COMMENT ON OPERATOR tide.<@ (tide.resvec, tide.resvec) IS 'fits in (every component of the left is at most the right''s)';

CREATE OPERATOR CLASS tide.resvec_ops
    DEFAULT FOR TYPE tide.resvec USING btree AS
        OPERATOR 1 tide.~<~,
        OPERATOR 2 tide.~<=~,
        OPERATOR 3 tide.=,
        OPERATOR 4 tide.~>=~,
        OPERATOR 5 tide.~>~,
        FUNCTION 1 tide.resvec_cmp(tide.resvec, tide.resvec);
CREATE OPERATOR CLASS tide.resvec_hash_ops
    DEFAULT FOR TYPE tide.resvec USING hash AS
        OPERATOR 1 tide.=,
        FUNCTION 1 tide.resvec_hash(tide.resvec),
        FUNCTION 2 tide.resvec_hash_extended(tide.resvec, bigint);

COMMENT ON OPERATOR CLASS tide.resvec_ops USING btree IS
    'total order of resource vectors (for GROUP BY, DISTINCT, unique indexes)';
COMMENT ON OPERATOR CLASS tide.resvec_hash_ops USING hash IS
    'hashing of resource vectors (for hash joins and hash aggregation)';

-- Access ------------------------------------------------------------------

CREATE FUNCTION tide.get(tide.resvec, name text) RETURNS numeric
    AS 'MODULE_PATHNAME', 'resvec_get'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_names(tide.resvec) RETURNS text[]
    AS 'MODULE_PATHNAME', 'resvec_names'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.each(tide.resvec, OUT name text, OUT quantity numeric)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'resvec_each'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 4;

COMMENT ON FUNCTION tide.get(tide.resvec, text) IS
    'quantity of one resource in units (0 when absent)';
COMMENT ON FUNCTION tide.resvec_names(tide.resvec) IS
    'the resource names of a vector, sorted';
COMMENT ON FUNCTION tide.each(tide.resvec) IS
    'one row (name, quantity) per non-zero component, sorted by name';

-- Aggregate ---------------------------------------------------------------

CREATE AGGREGATE tide.sum(tide.resvec) (
    SFUNC = tide.resvec_add,
    STYPE = tide.resvec,
    COMBINEFUNC = tide.resvec_add,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE tide.sum(tide.resvec) IS
    'componentwise sum of resource vectors (NULL for no rows, like sum())';

-- jsonb -------------------------------------------------------------------

CREATE FUNCTION tide.resvec_to_jsonb(tide.resvec) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'resvec_to_jsonb'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.resvec_from_jsonb(jsonb) RETURNS tide.resvec
    AS 'MODULE_PATHNAME', 'resvec_from_jsonb'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION tide.resvec_to_jsonb(tide.resvec) IS
    'resvec as a jsonb object of numbers: {"cpu": 4, "memory": 17179869184}';
COMMENT ON FUNCTION tide.resvec_from_jsonb(jsonb) IS
    'resvec from a jsonb object of numbers or quantity strings: {"cpu": 4, "memory": "16Gi"}';

CREATE CAST (tide.resvec AS jsonb) WITH FUNCTION tide.resvec_to_jsonb(tide.resvec);
CREATE CAST (jsonb AS tide.resvec) WITH FUNCTION tide.resvec_from_jsonb(jsonb);
COMMENT ON CAST (tide.resvec AS jsonb) IS 'resvec as a jsonb object of numbers';
COMMENT ON CAST (jsonb AS tide.resvec) IS 'resvec from a jsonb object of numbers or quantity strings';
