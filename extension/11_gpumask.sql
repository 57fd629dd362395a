-- tide.gpumask: a set of GPU indices 0..63 on one node, as a uint64 bitmap
-- passed by value (bit i = GPU i).  Text '0-3,6'; '' is the empty set.
-- C functions in src/gpumask.c; parsing and formatting in
-- src/core/gpumask_core.c.  Reference: docs/gpumask.md.

CREATE TYPE tide.gpumask;

CREATE FUNCTION tide.gpumask_in(cstring) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_in'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_out(tide.gpumask) RETURNS cstring
    AS 'MODULE_PATHNAME', 'gpumask_out'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_recv(internal) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_recv'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_send(tide.gpumask) RETURNS bytea
    AS 'MODULE_PATHNAME', 'gpumask_send'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE tide.gpumask (
    INPUT = tide.gpumask_in,
    OUTPUT = tide.gpumask_out,
    RECEIVE = tide.gpumask_recv,
    SEND = tide.gpumask_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);

COMMENT ON TYPE tide.gpumask IS
    'set of GPU indices 0..63 on one node, written like ''0-3,6''; '''' is the empty set';
COMMENT ON FUNCTION tide.gpumask_in(cstring) IS
    'gpumask text input: comma-separated GPU indices and ranges, such as ''0-3,6''';
COMMENT ON FUNCTION tide.gpumask_out(tide.gpumask) IS
    'gpumask text output: ascending, runs of 3 or more written as a range';
COMMENT ON FUNCTION tide.gpumask_recv(internal) IS
    'gpumask binary input: the bitmap as an 8-byte integer';
COMMENT ON FUNCTION tide.gpumask_send(tide.gpumask) IS
    'gpumask binary output: the bitmap as an 8-byte integer';

-- Set algebra.

CREATE FUNCTION tide.gpumask_or(tide.gpumask, tide.gpumask) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_or'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_and(tide.gpumask, tide.gpumask) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_and'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_minus(tide.gpumask, tide.gpumask) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_minus'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_contains(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_contains'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_contained(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_contained'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_overlaps(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_overlaps'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tide.gpumask_or(tide.gpumask, tide.gpumask) IS
    'union of two GPU masks (operator |)';
COMMENT ON FUNCTION tide.gpumask_and(tide.gpumask, tide.gpumask) IS
    'intersection of two GPU masks (operator &)';
COMMENT ON FUNCTION tide.gpumask_minus(tide.gpumask, tide.gpumask) IS
    'GPUs of the first mask that are not in the second (operator -)';
COMMENT ON FUNCTION tide.gpumask_contains(tide.gpumask, tide.gpumask) IS
    'does the first mask hold every GPU of the second (operator @>)';
COMMENT ON FUNCTION tide.gpumask_contained(tide.gpumask, tide.gpumask) IS
    'is every GPU of the first mask in the second (operator <@)';
COMMENT ON FUNCTION tide.gpumask_overlaps(tide.gpumask, tide.gpumask) IS
    'do the two masks share a GPU (operator &&)';

CREATE OPERATOR tide.| (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_or,
    COMMUTATOR = OPERATOR(tide.|)
);
CREATE OPERATOR tide.& (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_and,
    COMMUTATOR = OPERATOR(tide.&)
);
CREATE OPERATOR tide.- (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_minus
);
CREATE OPERATOR tide.@> (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_contains,
    COMMUTATOR = OPERATOR(tide.<@),
    RESTRICT = contsel, JOIN = contjoinsel
);
CREATE OPERATOR tide.<@ (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_contained,
    COMMUTATOR = OPERATOR(tide.@>),
    RESTRICT = contsel, JOIN = contjoinsel
);
CREATE OPERATOR tide.&& (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_overlaps,
    COMMUTATOR = OPERATOR(tide.&&),
    RESTRICT = areasel, JOIN = areajoinsel
);

COMMENT ON OPERATOR tide.| (tide.gpumask, tide.gpumask) IS 'union of GPU masks';
COMMENT ON OPERATOR tide.& (tide.gpumask, tide.gpumask) IS 'intersection of GPU masks';
COMMENT ON OPERATOR tide.- (tide.gpumask, tide.gpumask) IS 'difference of GPU masks';
COMMENT ON OPERATOR tide.@> (tide.gpumask, tide.gpumask) IS 'contains every GPU of';
COMMENT ON OPERATOR tide.<@ (tide.gpumask, tide.gpumask) IS 'every GPU is contained in';
COMMENT ON OPERATOR tide.&& (tide.gpumask, tide.gpumask) IS 'shares a GPU with';

-- Equality and a total order (the unsigned value of the bitmap: arbitrary
-- as a set order, but consistent with equality), for btree and hash.

CREATE FUNCTION tide.gpumask_eq(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_eq'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_ne(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_ne'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_lt(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_lt'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_le(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_le'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_gt(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_gt'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_ge(tide.gpumask, tide.gpumask) RETURNS boolean
    AS 'MODULE_PATHNAME', 'gpumask_ge'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_cmp(tide.gpumask, tide.gpumask) RETURNS integer
    AS 'MODULE_PATHNAME', 'gpumask_cmp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_sortsupport(internal) RETURNS void
    AS 'MODULE_PATHNAME', 'gpumask_sortsupport'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask_hash(tide.gpumask) RETURNS integer
    AS 'MODULE_PATHNAME', 'gpumask_hash'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION tide.gpumask_hash_extended(tide.gpumask, bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'gpumask_hash_extended'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

COMMENT ON FUNCTION tide.gpumask_eq(tide.gpumask, tide.gpumask) IS
    'do the two masks hold the same GPUs (operator =)';
COMMENT ON FUNCTION tide.gpumask_ne(tide.gpumask, tide.gpumask) IS
    'do the two masks differ (operator <>)';
COMMENT ON FUNCTION tide.gpumask_lt(tide.gpumask, tide.gpumask) IS
    'btree order of GPU masks: less than (operator <)';
COMMENT ON FUNCTION tide.gpumask_le(tide.gpumask, tide.gpumask) IS
    'btree order of GPU masks: less than or equal (operator <=)';
COMMENT ON FUNCTION tide.gpumask_gt(tide.gpumask, tide.gpumask) IS
    'btree order of GPU masks: greater than (operator >)';
COMMENT ON FUNCTION tide.gpumask_ge(tide.gpumask, tide.gpumask) IS
    'btree order of GPU masks: greater than or equal (operator >=)';
COMMENT ON FUNCTION tide.gpumask_cmp(tide.gpumask, tide.gpumask) IS
    'btree comparison of GPU masks by the unsigned value of the bitmap';
COMMENT ON FUNCTION tide.gpumask_sortsupport(internal) IS
    'btree sort support for GPU masks: a comparator without function-call overhead';
COMMENT ON FUNCTION tide.gpumask_hash(tide.gpumask) IS
    'hash of a GPU mask, for hash joins, hash aggregation and hash indexes';
COMMENT ON FUNCTION tide.gpumask_hash_extended(tide.gpumask, bigint) IS
    'seeded 64-bit hash of a GPU mask, for hash partitioning';

CREATE OPERATOR tide.= (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_eq,
    COMMUTATOR = OPERATOR(tide.=), NEGATOR = OPERATOR(tide.<>),
    RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES, MERGES
);
CREATE OPERATOR tide.<> (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_ne,
    COMMUTATOR = OPERATOR(tide.<>), NEGATOR = OPERATOR(tide.=),
    RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR tide.< (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_lt,
    COMMUTATOR = OPERATOR(tide.>), NEGATOR = OPERATOR(tide.>=),
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR tide.<= (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_le,
    COMMUTATOR = OPERATOR(tide.>=), NEGATOR = OPERATOR(tide.>),
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR tide.> (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_gt,
    COMMUTATOR = OPERATOR(tide.<), NEGATOR = OPERATOR(tide.<=),
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR tide.>= (
    LEFTARG = tide.gpumask, RIGHTARG = tide.gpumask,
    FUNCTION = tide.gpumask_ge,
    COMMUTATOR = OPERATOR(tide.<=), NEGATOR = OPERATOR(tide.<),
    RESTRICT = scalargesel, JOIN = scalargejoinsel
);

COMMENT ON OPERATOR tide.= (tide.gpumask, tide.gpumask) IS 'same GPUs';
COMMENT ON OPERATOR tide.<> (tide.gpumask, tide.gpumask) IS 'not the same GPUs';
COMMENT ON OPERATOR tide.< (tide.gpumask, tide.gpumask) IS 'less than, in the btree order of GPU masks';
COMMENT ON OPERATOR tide.<= (tide.gpumask, tide.gpumask) IS 'less than or equal, in the btree order of GPU masks';
COMMENT ON OPERATOR tide.> (tide.gpumask, tide.gpumask) IS 'greater than, in the btree order of GPU masks';
COMMENT ON OPERATOR tide.>= (tide.gpumask, tide.gpumask) IS 'greater than or equal, in the btree order of GPU masks';

CREATE OPERATOR CLASS tide.gpumask_ops
    DEFAULT FOR TYPE tide.gpumask USING btree AS
        OPERATOR 1 tide.< ,
        OPERATOR 2 tide.<= ,
        OPERATOR 3 tide.= ,
        OPERATOR 4 tide.>= ,
        OPERATOR 5 tide.> ,
        FUNCTION 1 tide.gpumask_cmp(tide.gpumask, tide.gpumask),
        FUNCTION 2 tide.gpumask_sortsupport(internal),
        -- Equal masks are bitwise equal: btree indexes may deduplicate.
        FUNCTION 4 pg_catalog.btequalimage(oid);

CREATE OPERATOR CLASS tide.gpumask_hash_ops
    DEFAULT FOR TYPE tide.gpumask USING hash AS
        OPERATOR 1 tide.= ,
        FUNCTION 1 tide.gpumask_hash(tide.gpumask),
        FUNCTION 2 tide.gpumask_hash_extended(tide.gpumask, bigint);

COMMENT ON OPERATOR CLASS tide.gpumask_ops USING btree IS
    'default btree order of GPU masks: the unsigned value of the bitmap (arbitrary, total)';
COMMENT ON OPERATOR FAMILY tide.gpumask_ops USING btree IS
    'btree operators of tide.gpumask';
COMMENT ON OPERATOR CLASS tide.gpumask_hash_ops USING hash IS
    'default hash operator class of GPU masks';
COMMENT ON OPERATOR FAMILY tide.gpumask_hash_ops USING hash IS
    'hash operators of tide.gpumask';

-- Functions.

CREATE FUNCTION tide.gpu_count(tide.gpumask) RETURNS integer
    AS 'MODULE_PATHNAME', 'gpumask_gpu_count'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.cuda_visible_devices(tide.gpumask) RETURNS text
    AS 'MODULE_PATHNAME', 'gpumask_cuda_visible_devices'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpumask(integer[]) RETURNS tide.gpumask
    AS 'MODULE_PATHNAME', 'gpumask_from_int_array'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION tide.gpu_indices(tide.gpumask) RETURNS integer[]
    AS 'MODULE_PATHNAME', 'gpumask_gpu_indices'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION tide.gpu_count(tide.gpumask) IS
    'number of GPUs in the mask';
COMMENT ON FUNCTION tide.cuda_visible_devices(tide.gpumask) IS
    'the mask as a launcher exports it in CUDA_VISIBLE_DEVICES: ''0,1,2,3'', '''' when empty';
COMMENT ON FUNCTION tide.gpumask(integer[]) IS
    'the set of the GPU indices in the array (0..63, no nulls)';
COMMENT ON FUNCTION tide.gpu_indices(tide.gpumask) IS
    'the GPU indices of the mask in ascending order';

-- tide.union(gpumask): the union of every mask, like bit_or.  The union of
-- no masks (no rows, or only NULLs) is the empty mask '', so a node without
-- allocations shows '' rather than NULL.  "union" is a reserved word: call it
-- schema-qualified, tide.union(gpus).
CREATE AGGREGATE tide.union(tide.gpumask) (
    SFUNC = tide.gpumask_or,
    STYPE = tide.gpumask,
    COMBINEFUNC = tide.gpumask_or,
    INITCOND = '',
    PARALLEL = SAFE
);

COMMENT ON AGGREGATE tide.union(tide.gpumask) IS
    'union of GPU masks; '''' (empty) over no rows';
