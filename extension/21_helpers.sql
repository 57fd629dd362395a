-- Small helpers every later part uses: the cycle's lock key and id, whether
-- rows are being restored from a dump, the GPU mask of a whole node, and the
-- checks of names and choices that the value checks share.

-- Who is writing in this backend (src/writer.c): tide.submit and
-- tide.run_cycle() do themselves what some triggers would do row by row,
-- for the rows of their own fixed statements, and say so here while those
-- run.  The triggers' WHEN clauses and the cycle's guards read it; no
-- setting, no SQL and no other session can change it.  Executable by
-- PUBLIC: a trigger's WHEN runs with the rights of whoever writes the table.
CREATE TYPE tide.writer AS ENUM ('none', 'submit', 'cycle', 'cycle_write');
COMMENT ON TYPE tide.writer IS
    'who is writing in this backend: none (an ordinary statement), submit (tide.submit''s own INSERTs), cycle (tide.run_cycle() runs), cycle_write (one of the cycle''s own writes)';
CREATE FUNCTION tide._writer() RETURNS tide.writer
    LANGUAGE c VOLATILE PARALLEL RESTRICTED
    AS 'MODULE_PATHNAME', 'tide_writer_sql';
COMMENT ON FUNCTION tide._writer() IS
    'who is writing in this backend now (src/writer.c): the triggers whose work tide.submit does itself step aside for submit, the change counter for cycle and cycle_write, and only cycle_write may place jobs or give a placement up';

CREATE FUNCTION tide._cycle_lock_key() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT 8388346165908733953::bigint $$;   -- 'tide' << 32 | 1
COMMENT ON FUNCTION tide._cycle_lock_key() IS
    'advisory lock key of the scheduling cycle: a cycle runs only under pg_try_advisory_xact_lock(tide._cycle_lock_key()) (R-C1)';

-- _current_cycle() and _restoring() are called by the triggers of every
-- submission: no SET clause, so that the planner inlines them into the
-- caller's statement (a function with SET is called through fmgr, its body
-- parsed and planned again in every transaction, the setting saved and
-- restored).  Every name and operator in them is qualified instead, so a
-- caller's search_path cannot change what they mean (NULLIF and CASE x
-- WHEN look up "=" by search_path: not used).
CREATE FUNCTION tide._current_cycle() RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT CASE WHEN pg_catalog.current_setting('tide.cycle_id', true) OPERATOR(pg_catalog.=) '' THEN NULL
            ELSE pg_catalog.current_setting('tide.cycle_id', true)::pg_catalog.int8 END
$$;
COMMENT ON FUNCTION tide._current_cycle() IS
    'the cycle making the current changes: the transaction-local setting tide.cycle_id (set_config(''tide.cycle_id'', id::text, true)), or NULL';

-- pg_dump and pg_restore scripts begin with SET row_security = off, and a
-- role subject to row-level security cannot insert with it off: so an
-- insert with row_security off is a restore (or a superuser who asked for
-- the same), and the rows go in as they were dumped: no insert checks, no
-- new history rows, no notifications.
CREATE FUNCTION tide._restoring() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT pg_catalog.current_setting('row_security') OPERATOR(pg_catalog.=) 'off' $$;
COMMENT ON FUNCTION tide._restoring() IS
    'true while rows are being restored from a dump (row_security is off): insert triggers then keep the rows as they were';

-- A gpumask of GPUs 0 .. n-1.  No SET clause, so that the planner inlines
-- it (the allocation trigger calls it once per node); every name in it is
-- qualified instead.  Not STRICT and only immutable parts (int4 to text,
-- not text || int4) for the same reason; NULL gives NULL anyway.
CREATE FUNCTION tide._all_gpus(n numeric) RETURNS tide.gpumask
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
SELECT CASE WHEN n OPERATOR(pg_catalog.<) 1 THEN ''::tide.gpumask
            ELSE ('0-' OPERATOR(pg_catalog.||) (n::pg_catalog.int4 OPERATOR(pg_catalog.-) 1)::pg_catalog.text)::tide.gpumask END
$$;
COMMENT ON FUNCTION tide._all_gpus(numeric) IS 'the mask of every GPU of a node with n GPUs (indices 0 to n-1)';

-- A value shown in an error message: at most n characters, cut with "..."
-- (src/cut.c: the C messages cut with the same function).  Every message
-- that echoes a value a user gave shows it through this, so that a 10 KB
-- name is not echoed whole.
CREATE FUNCTION tide._cut(value text, n integer DEFAULT 60) RETURNS text
    LANGUAGE c IMMUTABLE PARALLEL SAFE
    AS 'MODULE_PATHNAME', 'tide_cut_sql';
COMMENT ON FUNCTION tide._cut(text, integer) IS
    'a value as an error message shows it: at most n characters (60 by default), a longer one cut and ended with "..."';

-- Names are keys and index entries: capped so that a long one is refused
-- with its limit, not with an index's "index row requires ... bytes".
CREATE FUNCTION tide._name_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 255 $$;
COMMENT ON FUNCTION tide._name_max() IS
    'the longest name (characters) of a queue, node, task role, resource group or GPU type: 255';

-- Is name (what the caller calls it: 'queue name', 'role of task "x"') a
-- usable name?  NULL is left to the caller (a column's NOT NULL, a default).
--
-- The _check functions return true or raise.  Callers assign the result
-- (ok := tide._check_...(...)) rather than PERFORM it: an error's context
-- then names the function and line only, not the text of a statement.
CREATE FUNCTION tide._check_name(what text, name text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF name = '' THEN
        RAISE EXCEPTION '% must not be empty', what
            USING ERRCODE = 'check_violation',
                  HINT = pg_catalog.format('A name has 1 to %s characters.', tide._name_max());
    END IF;
    IF pg_catalog.length(name) > tide._name_max() THEN
        RAISE EXCEPTION '% is % characters long, the limit is %', what, pg_catalog.length(name), tide._name_max()
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = pg_catalog.format('A name has 1 to %s characters.', tide._name_max());
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_name(text, text) IS
    'refuses an empty name and one longer than tide._name_max() characters, naming what it is';

-- Is value one of choices?  (what names it; hint says what they mean)
CREATE FUNCTION tide._check_choice(what text, value text, choices text[], hint text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF value <> ALL (choices) THEN
        RAISE EXCEPTION '% must be %, not "%"', what,
            pg_catalog.concat_ws(' or ',
                                 NULLIF(pg_catalog.array_to_string(choices[1:pg_catalog.cardinality(choices) - 1], ', '), ''),
                                 choices[pg_catalog.cardinality(choices)]),
            tide._cut(value)
            USING ERRCODE = 'check_violation', HINT = hint;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_choice(text, text, text[], text) IS
    'refuses a value that is none of the choices, naming what it is and the choices';

-- The release_reason of an allocation whose exit was reported after it was
-- released without one (a lost node that came back): the only change a
-- released allocation accepts (tide._allocations_after_update).
CREATE FUNCTION tide._late_exit_reason(release_reason text, exit_code integer) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT coalesce(release_reason, 'released') OPERATOR(pg_catalog.||)
                 pg_catalog.format('; exited %s after that (reported late)', exit_code) $$;
COMMENT ON FUNCTION tide._late_exit_reason(text, integer) IS
    'release_reason of a released allocation once a late exit is recorded on it: the reason, then "; exited N after that (reported late)"';
