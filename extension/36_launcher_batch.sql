-- The launcher's reports: started, exited, evicted.
--
-- One set-based function per report does the work and answers for every
-- allocation id it was given, in array order, with an outcome:
--
--   tide.report_started(allocation_ids bigint[], tokens uuid[] DEFAULT NULL)
--   tide.report_exited(allocation_ids bigint[], exit_codes integer[],
--                      reasons text[] DEFAULT NULL,
--                      exited_ago interval[] DEFAULT NULL,
--                      tokens uuid[] DEFAULT NULL)
--   tide.report_evicted(allocation_ids bigint[], tokens uuid[] DEFAULT NULL)
--     RETURNS TABLE(allocation_id bigint, outcome text, reason text)
--
--   changed   the allocation moved (assigned -> running, ... -> released)
--   already   it was in the reported state already (a repeated report, or
--             a second mention of the id in the same call): nothing changed
--   refused   nothing changed, and reason says why: the id does not exist,
--             it belongs to a node the caller may not act for, it is
--             another allocation than the one reported (tokens), or its
--             state does not accept the report
--
-- tokens (R-C7): the token (tide.allocations.token) of each allocation
-- reported, as the launcher got it when it claimed it, or NULL for "any".
-- After an asynchronous failover the new primary may have given a lost
-- allocation's id to another allocation: a report that names the lost one
-- by its token is refused instead of changing the new one.
--
-- A refused id does not hold back the others: one call is one UPDATE of
-- tide.allocations (the allocation triggers, transition check and job
-- roll-up, run once per call), whatever the number of ids.  Which states
-- accept a report is read from tide.allocation_transitions: the changes
-- to the report's state whose reports column lists the report (e.g.
-- 'evicted').
--
-- The other forms are thin wrappers over the same work that turn the
-- outcomes into the errors and NOTICEs of the contract:
--
--   * tide.started(bigint), tide.exited(bigint, integer),
--     tide.evicted(bigint): one allocation; refused raises, already is a
--     NOTICE;
--   * tide.started(bigint[]), tide.exited(bigint[], integer[]),
--     tide.evicted(bigint[]): all or nothing; a refusal raises, naming the
--     first id, in array order, that does not exist or is another node's,
--     else the first whose state refuses; repeats are counted in one
--     NOTICE.
--
-- Arguments that are wrong as a whole are errors in every form: a NULL or
-- multi-dimensional array, arrays of different lengths, a NULL exit code.
--
-- reasons (tide.report_exited only): the launcher's reason for an exit it
-- decided itself, because the command could not be started (no command,
-- not found, not executable, output file, ...), one per id or NULL for a
-- program's own exit.  Stored on the allocation (exit_reason) and rolled
-- up into its job's state_reason when the job fails (26_rollup.sql).  A
-- reason with exit code 0 is an error (it explains a failure); each is
-- sanitised by tide._launcher_reason: control characters become spaces,
-- blanks at either end go, an empty one is NULL, and one longer than 500
-- characters is cut to 497 and ends in "...".  An exit reported late (the
-- allocation was released without one) keeps no reason.
--
-- exited_ago (tide.report_exited only, R-T6): how long before the call
-- each process exited, by the launcher's own clock, or NULL for "now".
-- The database records its clock minus it in exited_at (clock_timestamp():
-- the moment of the report, so that a stop decided earlier in the same
-- transaction comes first): only a duration crosses between the machines,
-- so their clocks need not agree, and the time the report spent on the
-- way only makes an exit look later (the safe side).  An exit of an allocation being stopped (releasing) that
-- happened before the stop was decided (release_decided_at) is the
-- allocation's exit: the roll-up succeeds or fails the job as the exit
-- says, instead of carrying out the eviction (26_rollup.sql).
--
-- Who may report is checked in one place, tide._launcher_targets: the
-- session may act as the role (tide._assert_acting_as) and the role may
-- act for the allocation's node (tide._may_launch).  It is SECURITY
-- DEFINER, so that an id of another node is told apart from one that does
-- not exist; the reports run with the caller's rights (row-level security
-- applies to the UPDATE).  Jobs are locked before allocations, both in id
-- order (no deadlock with another report, tide.cancel or the cycle).

-- For every mention of an id, in array order: its state after locking it,
-- or why the role may not report on it.  Locks the jobs, then the
-- allocations, of the ids the role may act for.
CREATE FUNCTION tide._launcher_targets(allocation_ids bigint[], who text, tokens uuid[] DEFAULT NULL)
    RETURNS TABLE(ord bigint, allocation_id bigint, state text, refusal text, errcode text, hint text)
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    mine bigint[];
BEGIN
    PERFORM tide._assert_acting_as(who);
    IF allocation_ids IS NULL THEN
        RAISE EXCEPTION 'allocation_ids must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an array of allocation ids; ''{}'' reports nothing.';
    END IF;
    IF pg_catalog.array_ndims(allocation_ids) > 1 THEN
        RAISE EXCEPTION 'allocation_ids must be a one-dimensional array, not % dimensions',
                pg_catalog.array_ndims(allocation_ids)
            USING ERRCODE = 'array_subscript_error';
    END IF;
    IF tokens IS NOT NULL AND pg_catalog.array_ndims(tokens) > 1 THEN
        RAISE EXCEPTION 'tokens must be a one-dimensional array, not % dimensions',
                pg_catalog.array_ndims(tokens)
            USING ERRCODE = 'array_subscript_error';
    END IF;
    IF pg_catalog.cardinality(tokens) <> pg_catalog.cardinality(allocation_ids) THEN
        RAISE EXCEPTION 'allocation_ids has % elements but tokens has %',
                pg_catalog.cardinality(allocation_ids), pg_catalog.cardinality(tokens)
            USING ERRCODE = 'array_subscript_error',
                  HINT = 'Pass one token (or NULL) per allocation id, in the same order.';
    END IF;

    -- The ids of nodes the role may act for: one permission check per node
    -- (in the select list, where no qual is pushed below the DISTINCT).
    WITH u AS (
        SELECT a.id, a.node FROM tide.allocations a WHERE a.id = ANY (allocation_ids)
    ), allowed AS (
        SELECT d.node, coalesce(tide._may_launch(d.node, who), false) AS ok
          FROM (SELECT DISTINCT u.node FROM u) d
    )
    SELECT pg_catalog.array_agg(u.id) INTO mine FROM u JOIN allowed p ON p.node = u.node WHERE p.ok;

    -- Lock order: jobs, then allocations, each in id order.
    PERFORM 1 FROM tide.jobs j
     WHERE j.id IN (SELECT a.job_id FROM tide.allocations a WHERE a.id = ANY (mine))
     ORDER BY j.id
       FOR NO KEY UPDATE OF j;
    PERFORM 1 FROM tide.allocations a
     WHERE a.id = ANY (mine)
     ORDER BY a.id
       FOR UPDATE OF a;

    -- (a join, not = ANY (mine) per row: thousands of ids in one call)
    RETURN QUERY
        SELECT x.ord, x.id,
               CASE WHEN m.id IS NOT NULL AND (x.token IS NULL OR x.token = a.token) THEN a.state END,
               CASE WHEN a.id IS NULL
                    THEN pg_catalog.format('allocation %s does not exist', coalesce(x.id::text, 'NULL'))
                    WHEN m.id IS NULL
                    THEN pg_catalog.format('allocation %s belongs to node "%s", which role "%s" may not act for', x.id, a.node, who)
                    WHEN x.token <> a.token
                    THEN pg_catalog.format('allocation %s is another allocation now (of job %s): the one reported (token %s) no longer exists, e.g. lost in an asynchronous failover',
                                           x.id, a.job_id, x.token)
               END,
               CASE WHEN a.id IS NULL OR x.token <> a.token THEN '42704' WHEN m.id IS NULL THEN '42501' END,
               CASE WHEN a.id IS NOT NULL AND m.id IS NULL
                    THEN 'A launcher reports only on the allocations of its own node.'
                    WHEN x.token <> a.token
                    THEN 'Its process has no live allocation: stop it (tide.reconcile tells a launcher which of its processes have none).' END
          FROM (SELECT u.id, u.ord, tokens[u.ord::integer] AS token
                  FROM unnest(allocation_ids) WITH ORDINALITY AS u(id, ord)) AS x
          LEFT JOIN tide.allocations a ON a.id = x.id
          LEFT JOIN unnest(mine) AS m(id) ON m.id = x.id
         ORDER BY x.ord;
END
$$;
COMMENT ON FUNCTION tide._launcher_targets(bigint[], text, uuid[]) IS
    'for the launcher reports: for each mention of an id, in array order, its state after locking its job and itself, or why the role may not report on it (it does not exist, the role may not act for its node, or its token is not the one reported: R-C7); the one place where who may report is checked';

-- The states from which a report moves an allocation to target: the
-- changes to target in tide.allocation_transitions that list the report.
-- SECURITY DEFINER: launchers do not read that table.
CREATE FUNCTION tide._report_accepts(report text, target text) RETURNS text[]
    LANGUAGE sql STABLE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT coalesce(pg_catalog.array_agg(t.old_state ORDER BY t.old_state), '{}')
  FROM tide.allocation_transitions t
 WHERE t.new_state = target
   AND report OPERATOR(pg_catalog.=) ANY (t.reports)
$$;
COMMENT ON FUNCTION tide._report_accepts(text, text) IS
    'the allocation states a launcher report (started, exited, evicted) accepts: the changes to its target state in tide.allocation_transitions whose reports list it';

-- A launcher's reason as stored (tide.allocations.exit_reason): a run of
-- control characters (newlines, escapes) and the blanks next to it
-- becomes one space, blanks at either end go, empty is NULL, and more
-- than 500 characters are cut to 497 and "...".  Only the first 2,000
-- characters are looked at, so a huge text costs no more than a short one.
CREATE FUNCTION tide._launcher_reason(reason text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE WHEN pg_catalog.char_length(r) > 500
            THEN pg_catalog.rtrim(pg_catalog.left(r, 497)) OPERATOR(pg_catalog.||) '...'
            ELSE r END
  FROM (SELECT NULLIF(pg_catalog.btrim(pg_catalog.regexp_replace(pg_catalog.left(reason, 2000),
                                                                 '[[:space:][:cntrl:]]*[[:cntrl:]][[:space:][:cntrl:]]*',
                                                                 ' ', 'g')), '') AS r) x
$$;
COMMENT ON FUNCTION tide._launcher_reason(text) IS
    'a launcher''s reason for an exit, as stored in tide.allocations.exit_reason: control characters replaced by spaces, trimmed, NULL when empty, at most 500 characters (longer ones end in "...")';

-- R-C3: an exit reported late, for an allocation released without one (its
-- node was lost, or it was released before its launcher could report).  It
-- is recorded on the allocation (exit_code, a note in release_reason).  When
-- every replica of that attempt (the job's allocations placed by the same
-- cycle) has then exited 0 and nothing replaced the work yet, the job
-- finished: a job still pending (requeued, not placed again), or failed by
-- the loss with its retry still pending and never placed (the retry is
-- cancelled), is succeeded.  Otherwise nothing else changes.  The caller
-- holds the jobs, then the allocations (tide._launcher_targets).
CREATE FUNCTION tide._late_exits(allocation_ids bigint[], exit_codes integer[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    done record;
BEGIN
    UPDATE tide.allocations a
       SET exit_code = u.code,
           release_reason = tide._late_exit_reason(a.release_reason, u.code)
      FROM unnest(allocation_ids, exit_codes) AS u(id, code)
     WHERE a.id = u.id AND a.state = 'released' AND a.exit_code IS NULL;

    FOR done IN
        SELECT x.job_id, pg_catalog.string_agg(DISTINCT x.node, ', ') AS nodes
          FROM (SELECT DISTINCT a.job_id, a.cycle_id FROM tide.allocations a
                 WHERE a.id = ANY (allocation_ids)) att
          JOIN tide.allocations x ON x.job_id = att.job_id AND x.cycle_id IS NOT DISTINCT FROM att.cycle_id
         GROUP BY x.job_id, att.cycle_id
        HAVING pg_catalog.bool_and(x.state = 'released' AND x.exit_code = 0)
         ORDER BY x.job_id
    LOOP
        -- its retries not placed yet (locked: a cycle may be placing them)
        PERFORM 1 FROM tide.jobs r WHERE r.retry_of = done.job_id ORDER BY r.id FOR NO KEY UPDATE;
        IF NOT EXISTS (SELECT 1 FROM tide.jobs j
                        WHERE j.id = done.job_id
                          AND (j.state = 'pending'
                               OR (j.state = 'failed' AND j.exit_code IS NULL
                                   AND NOT EXISTS (SELECT 1 FROM tide.jobs r
                                                    WHERE r.retry_of = j.id
                                                      AND (r.state <> 'pending'
                                                           OR EXISTS (SELECT 1 FROM tide.allocations ra
                                                                       WHERE ra.job_id = r.id)))))) THEN
            CONTINUE;
        END IF;
        -- the job first: its dependents judge it succeeded before its
        -- retry is cancelled (R-P1)
        UPDATE tide.jobs j
           SET state = 'succeeded', exit_code = 0, pending_reason = NULL, finished_at = pg_catalog.now(),
               state_reason = pg_catalog.format('all replicas exited 0 on node %s while it was unreachable (reported late, after it came back)',
                                                done.nodes)
         WHERE j.id = done.job_id;
        UPDATE tide.jobs r
           SET state = 'cancelled', pending_reason = NULL, finished_at = pg_catalog.now(),
               state_reason = pg_catalog.format('cancelled: job %s, which it retries, finished on node %s while that node was unreachable',
                                                done.job_id, done.nodes)
         WHERE r.retry_of = done.job_id AND r.state = 'pending';
    END LOOP;
END
$$;
COMMENT ON FUNCTION tide._late_exits(bigint[], integer[]) IS
    'records exits reported for allocations released without one (a lost node that came back) on the allocations; a job whose lost attempt all exited 0 and that nothing replaced yet (pending, or failed with its retry never placed) is succeeded, the retry cancelled (R-C3)';

-- The one implementation of the three reports.  all_or_nothing: change
-- nothing when any id is refused (the array wrappers then raise).
CREATE FUNCTION tide._report(report text, allocation_ids bigint[], exit_codes integer[], who text,
                             all_or_nothing boolean, reasons text[] DEFAULT NULL,
                             exited_ago interval[] DEFAULT NULL, tokens uuid[] DEFAULT NULL)
    RETURNS TABLE(ord bigint, allocation_id bigint, outcome text, reason text, errcode text, hint text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    target text := CASE report WHEN 'started' THEN 'running' ELSE 'released' END;
    accepts text[] := tide._report_accepts(report, target);
    r_ord bigint[];
    r_id bigint[];
    r_outcome text[];
    r_reason text[];
    r_errcode text[];
    r_hint text[];
    change_ids bigint[];
    change_codes integer[];
    change_reasons text[];
    change_agos interval[];
    late_ids bigint[];
    late_codes integer[];
    bad record;
BEGIN
    IF report NOT IN ('started', 'exited', 'evicted') THEN
        RAISE EXCEPTION 'unknown launcher report "%"', tide._cut(report)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF report = 'exited' THEN
        IF exit_codes IS NULL THEN
            RAISE EXCEPTION 'exit_codes must not be NULL'
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'Pass one exit code per allocation id.';
        END IF;
        IF pg_catalog.array_ndims(exit_codes) > 1 THEN
            RAISE EXCEPTION 'exit_codes must be a one-dimensional array, not % dimensions',
                    pg_catalog.array_ndims(exit_codes)
                USING ERRCODE = 'array_subscript_error';
        END IF;
        IF allocation_ids IS NOT NULL
           AND pg_catalog.cardinality(allocation_ids) <> pg_catalog.cardinality(exit_codes) THEN
            RAISE EXCEPTION 'allocation_ids has % elements but exit_codes has %',
                    pg_catalog.cardinality(allocation_ids), pg_catalog.cardinality(exit_codes)
                USING ERRCODE = 'array_subscript_error',
                      HINT = 'Pass one exit code per allocation id, in the same order.';
        END IF;
        IF reasons IS NOT NULL AND pg_catalog.array_ndims(reasons) > 1 THEN
            RAISE EXCEPTION 'reasons must be a one-dimensional array, not % dimensions',
                    pg_catalog.array_ndims(reasons)
                USING ERRCODE = 'array_subscript_error';
        END IF;
        IF pg_catalog.cardinality(reasons) <> pg_catalog.cardinality(exit_codes) THEN
            RAISE EXCEPTION 'exit_codes has % elements but reasons has %',
                    pg_catalog.cardinality(exit_codes), pg_catalog.cardinality(reasons)
                USING ERRCODE = 'array_subscript_error',
                      HINT = 'Pass one reason (or NULL) per allocation id, in the same order.';
        END IF;
        -- the first NULL code, else the first reason given with code 0
        SELECT x.ord, a.id, x.code IS NULL AS null_code INTO bad
          FROM unnest(exit_codes, reasons) WITH ORDINALITY AS x(code, reason, ord)
          LEFT JOIN unnest(allocation_ids) WITH ORDINALITY AS a(id, ord) ON a.ord = x.ord
         WHERE x.code IS NULL OR (x.code = 0 AND x.reason IS NOT NULL)
         ORDER BY x.code IS NOT NULL, x.ord
         LIMIT 1;
        IF FOUND AND bad.null_code THEN
            RAISE EXCEPTION 'exit code % (for allocation %) must not be NULL', bad.ord, coalesce(bad.id::text, 'NULL')
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'Report the process''s exit status; a process killed by signal N exits 128+N.';
        ELSIF FOUND THEN
            RAISE EXCEPTION 'reason % (for allocation %) comes with exit code 0', bad.ord, coalesce(bad.id::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A launcher''s reason explains a failure to start: report it with the non-zero code the job should see (e.g. 127: command not found).';
        END IF;
        IF exited_ago IS NOT NULL AND pg_catalog.array_ndims(exited_ago) > 1 THEN
            RAISE EXCEPTION 'exited_ago must be a one-dimensional array, not % dimensions',
                    pg_catalog.array_ndims(exited_ago)
                USING ERRCODE = 'array_subscript_error';
        END IF;
        IF pg_catalog.cardinality(exited_ago) <> pg_catalog.cardinality(exit_codes) THEN
            RAISE EXCEPTION 'exit_codes has % elements but exited_ago has %',
                    pg_catalog.cardinality(exit_codes), pg_catalog.cardinality(exited_ago)
                USING ERRCODE = 'array_subscript_error',
                      HINT = 'Pass one duration (or NULL) per allocation id, in the same order.';
        END IF;
        SELECT x.ord, a.id, x.ago INTO bad
          FROM unnest(exited_ago) WITH ORDINALITY AS x(ago, ord)
          LEFT JOIN unnest(allocation_ids) WITH ORDINALITY AS a(id, ord) ON a.ord = x.ord
         WHERE x.ago < interval '0'
         ORDER BY x.ord
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'exited_ago % (for allocation %) is negative: %', bad.ord, coalesce(bad.id::text, 'NULL'), bad.ago
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Pass how long ago the process exited (0 or more), or NULL for now.';
        END IF;
    ELSIF reasons IS NOT NULL THEN
        RAISE EXCEPTION 'a launcher report "%" takes no reasons', report
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Reasons go with exits: tide.report_exited(allocation_ids, exit_codes, reasons).';
    ELSIF exited_ago IS NOT NULL THEN
        RAISE EXCEPTION 'a launcher report "%" takes no exit times', report
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Exit times go with exits: tide.report_exited(allocation_ids, exit_codes, reasons, exited_ago).';
    END IF;

    WITH t AS (
        SELECT t.*, pg_catalog.row_number() OVER (PARTITION BY t.allocation_id ORDER BY t.ord) AS mention
          FROM tide._launcher_targets(allocation_ids, who, tokens) AS t
    ), d AS (
        SELECT t.ord, t.allocation_id, t.mention, t.state, t.refusal, t.errcode, t.hint,
               CASE WHEN t.refusal IS NOT NULL THEN 'refused'
                    -- an exit of work released without one: recorded late
                    WHEN l.id IS NOT NULL THEN 'changed'
                    WHEN t.state = target THEN 'already'
                    WHEN t.state = ANY (accepts) THEN 'changed'
                    ELSE 'refused'
               END AS decided,
               l.id IS NOT NULL AS late
          FROM t
          LEFT JOIN tide.allocations l
            ON report = 'exited' AND t.refusal IS NULL AND t.state = 'released'
           AND l.id = t.allocation_id AND l.exit_code IS NULL AND l.release_reason IS DISTINCT FROM 'exited'
    )
    SELECT pg_catalog.array_agg(d.ord ORDER BY d.ord),
           pg_catalog.array_agg(d.allocation_id ORDER BY d.ord),
           -- a second mention of an id that changes finds it changed already
           pg_catalog.array_agg(CASE WHEN d.decided = 'changed' AND d.mention > 1 THEN 'already' ELSE d.decided END
                                ORDER BY d.ord),
           pg_catalog.array_agg(CASE WHEN d.refusal IS NOT NULL THEN d.refusal
                                     WHEN d.decided <> 'refused' THEN NULL
                                     WHEN report = 'started'
                                     THEN pg_catalog.format('allocation %s is %s, so it cannot start', d.allocation_id, d.state)
                                     WHEN report = 'evicted'
                                     THEN pg_catalog.format('allocation %s is %s, not being evicted', d.allocation_id, d.state)
                                     ELSE pg_catalog.format('allocation %s is %s, so it cannot exit', d.allocation_id, d.state)
                                END ORDER BY d.ord),
           pg_catalog.array_agg(CASE WHEN d.refusal IS NOT NULL THEN d.errcode
                                     WHEN d.decided = 'refused' THEN '55000' END ORDER BY d.ord),
           pg_catalog.array_agg(CASE WHEN d.refusal IS NOT NULL THEN d.hint
                                     WHEN d.decided <> 'refused' THEN NULL
                                     WHEN report = 'started' AND d.state = 'releasing'
                                     THEN 'It is being evicted: stop it and report with tide.evicted().'
                                     WHEN report = 'started'
                                     THEN 'It is over; claim new work with tide.claim().'
                                     WHEN report = 'evicted'
                                     THEN 'Report a process that ended on its own with tide.exited(allocation_id, exit_code).'
                                     ELSE 'The allowed changes are listed in tide.allocation_transitions.'
                                END ORDER BY d.ord),
           pg_catalog.array_agg(d.allocation_id ORDER BY d.ord) FILTER (WHERE d.decided = 'changed' AND d.mention = 1 AND NOT d.late),
           pg_catalog.array_agg(exit_codes[d.ord::integer] ORDER BY d.ord) FILTER (WHERE d.decided = 'changed' AND d.mention = 1 AND NOT d.late),
           pg_catalog.array_agg(tide._launcher_reason(reasons[d.ord::integer]) ORDER BY d.ord)
               FILTER (WHERE d.decided = 'changed' AND d.mention = 1 AND NOT d.late),
           pg_catalog.array_agg(exited_ago[d.ord::integer] ORDER BY d.ord)
               FILTER (WHERE d.decided = 'changed' AND d.mention = 1 AND NOT d.late),
           pg_catalog.array_agg(d.allocation_id ORDER BY d.ord) FILTER (WHERE d.late AND d.mention = 1),
           pg_catalog.array_agg(exit_codes[d.ord::integer] ORDER BY d.ord) FILTER (WHERE d.late AND d.mention = 1)
      INTO r_ord, r_id, r_outcome, r_reason, r_errcode, r_hint, change_ids, change_codes, change_reasons,
           change_agos, late_ids, late_codes
      FROM d;

    IF late_ids IS NOT NULL AND NOT (all_or_nothing AND 'refused' = ANY (r_outcome)) THEN
        PERFORM tide._late_exits(late_ids, late_codes);
    END IF;

    IF change_ids IS NOT NULL AND NOT (all_or_nothing AND 'refused' = ANY (r_outcome)) THEN
        IF report = 'started' THEN
            UPDATE tide.allocations x SET state = 'running', started_at = pg_catalog.now()
             WHERE x.id = ANY (change_ids);
        ELSIF report = 'exited' THEN
            -- exited_at: R-T6 (a stop decided after it does not count)
            UPDATE tide.allocations x
               SET state = 'released', exit_code = u.code, released_at = pg_catalog.now(),
                   release_reason = 'exited', exit_reason = u.reason,
                   exited_at = pg_catalog.clock_timestamp() - coalesce(u.ago, interval '0')
              FROM unnest(change_ids, change_codes, change_reasons, change_agos) AS u(id, code, reason, ago)
             WHERE x.id = u.id;
        ELSE
            UPDATE tide.allocations x
               SET state = 'released', released_at = pg_catalog.now(),
                   release_reason = coalesce(x.release_reason, 'evicted')
             WHERE x.id = ANY (change_ids);
        END IF;
    END IF;

    RETURN QUERY
        SELECT u.ord, u.id, u.outcome, u.reason, u.errcode, u.hint
          FROM unnest(r_ord, r_id, r_outcome, r_reason, r_errcode, r_hint)
                   AS u(ord, id, outcome, reason, errcode, hint)
         ORDER BY u.ord;
END
$$;
COMMENT ON FUNCTION tide._report(text, bigint[], integer[], text, boolean, text[], interval[], uuid[]) IS
    'the launcher reports (started, exited, evicted) for many allocations in one UPDATE: an outcome per mention of an id (changed, already, refused with the reason, SQLSTATE and hint); accepted states from tide.allocation_transitions; all_or_nothing changes nothing when any is refused; reasons (exited only): the launcher''s own reason per exit, stored in exit_reason; exited_ago (exited only): how long ago each exited, exited_at = clock_timestamp() minus it (R-T6); tokens: the token of each allocation reported, or NULL (R-C7)';

-- Raise an error of a refused report (a hint only when there is one).
CREATE FUNCTION tide._raise_refusal(message text, code text, hint text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF hint IS NULL THEN
        RAISE EXCEPTION '%', message USING ERRCODE = code;
    END IF;
    RAISE EXCEPTION '%', message USING ERRCODE = code, HINT = hint;
END
$$;
COMMENT ON FUNCTION tide._raise_refusal(text, text, text) IS
    'raises the error of a refused launcher report: its reason, SQLSTATE and hint';

-- The single-id form of tide._launcher_targets: the allocation, locked, or
-- the error that refuses it.
CREATE FUNCTION tide._launcher_target(allocation_id bigint, who text) RETURNS tide.allocations
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t record;
    a tide.allocations;
BEGIN
    SELECT * INTO t FROM tide._launcher_targets(ARRAY[_launcher_target.allocation_id], who);
    IF t.refusal IS NOT NULL THEN
        PERFORM tide._raise_refusal(t.refusal, t.errcode, t.hint);
    END IF;
    SELECT * INTO a FROM tide.allocations x WHERE x.id = _launcher_target.allocation_id;
    RETURN a;
END
$$;
COMMENT ON FUNCTION tide._launcher_target(bigint, text) IS
    'for one allocation: the allocation, after checking the role may act for its node and locking its job and itself (tide._launcher_targets); raises when refused';

-- The body of the wrappers: the report, all or nothing.  Raises the first
-- refusal (an id that does not exist or is another node's first, in array
-- order; else the first whose state refuses); returns the ids that were
-- reported already (NULL: none), in array order.
CREATE FUNCTION tide._report_all(report text, allocation_ids bigint[], exit_codes integer[])
    RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    already bigint[];
    bad_reason text;
    bad_code text;
    bad_hint text;
BEGIN
    SELECT pg_catalog.array_agg(r.allocation_id ORDER BY r.ord) FILTER (WHERE r.outcome = 'already'),
           (pg_catalog.array_agg(r.reason ORDER BY r.errcode = '55000', r.ord) FILTER (WHERE r.outcome = 'refused'))[1],
           (pg_catalog.array_agg(r.errcode ORDER BY r.errcode = '55000', r.ord) FILTER (WHERE r.outcome = 'refused'))[1],
           (pg_catalog.array_agg(r.hint ORDER BY r.errcode = '55000', r.ord) FILTER (WHERE r.outcome = 'refused'))[1]
      INTO already, bad_reason, bad_code, bad_hint
      FROM tide._report(report, allocation_ids, exit_codes, CURRENT_USER, true) AS r;
    IF bad_reason IS NOT NULL THEN
        PERFORM tide._raise_refusal(bad_reason, bad_code, bad_hint);
    END IF;
    RETURN already;
END
$$;
COMMENT ON FUNCTION tide._report_all(text, bigint[], integer[]) IS
    'a launcher report, all or nothing: raises the first refusal (unknown or another node''s ids before refused states, each in array order); returns the ids reported already';

-- The NOTICE of an array wrapper in which some reports changed nothing.
CREATE FUNCTION tide._batch_notice(allocation_ids bigint[], already bigint[], what text)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF already IS NULL THEN
        RETURN;
    END IF;
    RAISE NOTICE '% of % allocations %; nothing changed for them',
            pg_catalog.cardinality(already), pg_catalog.cardinality(allocation_ids), what
        USING DETAIL = pg_catalog.format('Allocations: %s%s.',
                           pg_catalog.array_to_string(already[1:20], ', '),
                           CASE WHEN pg_catalog.cardinality(already) > 20 THEN ', ...' ELSE '' END);
END
$$;
COMMENT ON FUNCTION tide._batch_notice(bigint[], bigint[], text) IS
    'raises the NOTICE of an array launcher report in which some ids changed nothing (how many, and the first 20 in array order)';

-- ---------------------------------------------------------------- per id

CREATE FUNCTION tide.report_started(allocation_ids bigint[], tokens uuid[] DEFAULT NULL)
    RETURNS TABLE(allocation_id bigint, outcome text, reason text)
    LANGUAGE sql
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT r.allocation_id, r.outcome, r.reason
  FROM tide._report('started', allocation_ids, NULL, CURRENT_USER, false, NULL, NULL, tokens) AS r
 ORDER BY r.ord
$$;
COMMENT ON FUNCTION tide.report_started(bigint[], uuid[]) IS
    'the launcher started these allocations'' processes: assigned -> running in one statement; tokens (optional, one per id or NULL): each allocation''s token as claimed, so that an id reused after a failover is refused (R-C7); one row per id, in array order: changed, already (running), or refused with the reason';

CREATE FUNCTION tide.report_exited(allocation_ids bigint[], exit_codes integer[], reasons text[] DEFAULT NULL,
                                   exited_ago interval[] DEFAULT NULL, tokens uuid[] DEFAULT NULL)
    RETURNS TABLE(allocation_id bigint, outcome text, reason text)
    LANGUAGE sql
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT r.allocation_id, r.outcome, r.reason
  FROM tide._report('exited', allocation_ids, exit_codes, CURRENT_USER, false, reasons, exited_ago, tokens) AS r
 ORDER BY r.ord
$$;
COMMENT ON FUNCTION tide.report_exited(bigint[], integer[], text[], interval[], uuid[]) IS
    'these allocations'' processes ended with these exit codes (one per id, in order): released in one statement, a non-zero code fails its job; reasons (optional, one per id or NULL): the launcher''s own reason when it could not start the command, rolled up into the failed job''s state_reason; exited_ago (optional, one per id or NULL for now): how long ago each process exited, so that an exit before its stop was decided counts as the exit (R-T6); tokens (optional, one per id or NULL): each allocation''s token as claimed (R-C7); one row per id, in array order: changed, already (released), or refused with the reason';

CREATE FUNCTION tide.report_evicted(allocation_ids bigint[], tokens uuid[] DEFAULT NULL)
    RETURNS TABLE(allocation_id bigint, outcome text, reason text)
    LANGUAGE sql
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT r.allocation_id, r.outcome, r.reason
  FROM tide._report('evicted', allocation_ids, NULL, CURRENT_USER, false, NULL, NULL, tokens) AS r
 ORDER BY r.ord
$$;
COMMENT ON FUNCTION tide.report_evicted(bigint[], uuid[]) IS
    'the launcher stopped these evicted allocations: releasing -> released in one statement, freeing their resources; tokens (optional, one per id or NULL): each allocation''s token as claimed (R-C7); one row per id, in array order: changed, already (released), or refused with the reason';

-- ---------------------------------------------------------------- one id

CREATE FUNCTION tide.started(allocation_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._report_all('started', ARRAY[started.allocation_id], NULL) IS NOT NULL THEN
        RAISE NOTICE 'allocation % already started; nothing changed', started.allocation_id;
    END IF;
END
$$;
COMMENT ON FUNCTION tide.started(bigint) IS
    'the launcher started the allocation''s process: assigned -> running (the job runs once all its allocations started)';

CREATE FUNCTION tide.exited(allocation_id bigint, exit_code integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF exited.exit_code IS NULL THEN
        RAISE EXCEPTION 'exit_code must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Report the process''s exit status; a process killed by signal N exits 128+N.';
    END IF;
    IF tide._report_all('exited', ARRAY[exited.allocation_id], ARRAY[exited.exit_code]) IS NOT NULL THEN
        RAISE NOTICE 'allocation % is already released; nothing changed', exited.allocation_id;
    END IF;
END
$$;
COMMENT ON FUNCTION tide.exited(bigint, integer) IS
    'the allocation''s process ended with this exit code: released; a non-zero code fails the job (its other replicas are evicted, a retry is made when retries are left); all exited 0: succeeded';

CREATE FUNCTION tide.evicted(allocation_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._report_all('evicted', ARRAY[evicted.allocation_id], NULL) IS NOT NULL THEN
        RAISE NOTICE 'allocation % is already released; nothing changed', evicted.allocation_id;
    END IF;
END
$$;
COMMENT ON FUNCTION tide.evicted(bigint) IS
    'the launcher stopped an evicted allocation: releasing -> released, freeing its resources; once all are released the eviction reaches its goal';

-- ---------------------------------------------------------------- arrays, all or nothing

CREATE FUNCTION tide.started(allocation_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._batch_notice(started.allocation_ids,
                               tide._report_all('started', started.allocation_ids, NULL),
                               'were already started');
END
$$;
COMMENT ON FUNCTION tide.started(bigint[]) IS
    'the launcher started these allocations'' processes: assigned -> running, in one statement (the allocation triggers run once); the same checks as tide.started(bigint) for every id, all or nothing';

CREATE FUNCTION tide.exited(allocation_ids bigint[], exit_codes integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._batch_notice(exited.allocation_ids,
                               tide._report_all('exited', exited.allocation_ids, exited.exit_codes),
                               'were already released');
END
$$;
COMMENT ON FUNCTION tide.exited(bigint[], integer[]) IS
    'these allocations'' processes ended with these exit codes (one per id, in order): released, in one statement; a non-zero code fails its job (the rest of the gang is evicted); the same checks as tide.exited(bigint, integer) for every id, all or nothing';

CREATE FUNCTION tide.evicted(allocation_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM tide._batch_notice(evicted.allocation_ids,
                               tide._report_all('evicted', evicted.allocation_ids, NULL),
                               'were already released');
END
$$;
COMMENT ON FUNCTION tide.evicted(bigint[]) IS
    'the launcher stopped these evicted allocations: releasing -> released, in one statement, freeing their resources; the same checks as tide.evicted(bigint) for every id, all or nothing';

-- Privileges (the single-row calls and tide._launcher_target are granted in
-- 40_roles.sql).
REVOKE ALL ON FUNCTION
    tide._launcher_targets(bigint[], text, uuid[]),
    tide._report_accepts(text, text),
    tide._report(text, bigint[], integer[], text, boolean, text[], interval[], uuid[]),
    tide._launcher_reason(text),
    tide._raise_refusal(text, text, text),
    tide._report_all(text, bigint[], integer[]),
    tide._batch_notice(bigint[], bigint[], text),
    tide.report_started(bigint[], uuid[]),
    tide.report_exited(bigint[], integer[], text[], interval[], uuid[]),
    tide.report_evicted(bigint[], uuid[]),
    tide.started(bigint[]),
    tide.exited(bigint[], integer[]),
    tide.evicted(bigint[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    tide._launcher_targets(bigint[], text, uuid[]),
    tide._report_accepts(text, text),
    tide._report(text, bigint[], integer[], text, boolean, text[], interval[], uuid[]),
    tide._launcher_reason(text),
    tide._raise_refusal(text, text, text),
    tide._report_all(text, bigint[], integer[]),
    tide._batch_notice(bigint[], bigint[], text),
    tide.report_started(bigint[], uuid[]),
    tide.report_exited(bigint[], integer[], text[], interval[], uuid[]),
    tide.report_evicted(bigint[], uuid[]),
    tide.started(bigint[]),
    tide.exited(bigint[], integer[]),
    tide.evicted(bigint[])
    TO tide_launcher, tide_admin;
