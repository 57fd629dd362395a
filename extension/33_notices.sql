-- Completion notices (R-C5): when a job starts running or ends, its owner's
-- channel hears a NOTIFY naming the job and its new state (docs/notices.md).
--
-- PostgreSQL lets any role LISTEN on any channel name, so the name is what
-- keeps one role from hearing another's: it is derived from a random secret
-- that only the extension's owner reads, and tide.owner_channel() hands a
-- role its own name only.  A payload says nothing but job ids and states,
-- which the owner can read anyway.

CREATE TABLE tide._notice_secret (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT notice_secret_one_row CHECK (only_row),
    secret   text NOT NULL
);
COMMENT ON TABLE tide._notice_secret IS
    'the random secret the owners'' notice channels are derived from (R-C5); readable by the extension''s owner only, made anew by CREATE EXTENSION (a restored database has new channel names)';
-- two version-4 UUIDs: 244 random bits from the server's strong random source
INSERT INTO tide._notice_secret (secret)
SELECT pg_catalog.replace(pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text, '-', '');

-- The channel of owner: "tide_owner_" and 40 hex digits of a hash of the
-- secret and the name, a valid identifier (LISTEN takes it unquoted).
CREATE FUNCTION tide._owner_channel_of(owner text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT 'tide_owner_' OPERATOR(pg_catalog.||)
       pg_catalog.left(pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(s.secret OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) owner, 'UTF8')), 'hex'), 40)
  FROM tide._notice_secret s
$$;
COMMENT ON FUNCTION tide._owner_channel_of(text) IS
    'the notice channel of a job owner, from the secret (R-C5); internal: not executable by PUBLIC';

-- The channel of role, for a session that may act as that role (its login
-- role is a member of it, as SET ROLE requires): what tide.owner_channel()
-- asks with the caller's current role.  A SECURITY DEFINER function sees
-- the session's login role, not who called it, hence the check here.
CREATE FUNCTION tide._channel_for(role text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r
                    WHERE r.rolname = _channel_for.role
                      AND pg_catalog.pg_has_role(SESSION_USER, r.oid, 'MEMBER')) THEN
        RAISE EXCEPTION 'role "%" may not know the notice channel of role "%"', SESSION_USER, tide._cut(role)
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A role hears only its own jobs'' notices: connect as that role and call tide.owner_channel().';
    END IF;
    RETURN tide._owner_channel_of(role);
END
$$;
COMMENT ON FUNCTION tide._channel_for(text) IS
    'the notice channel of role, for a session whose login role is a member of it (else an error); called by tide.owner_channel() with CURRENT_USER (R-C5)';

CREATE FUNCTION tide.owner_channel() RETURNS text
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT tide._channel_for(CURRENT_USER) $$;
COMMENT ON FUNCTION tide.owner_channel() IS
    'the channel on which the calling role hears (LISTEN) a NOTIFY for each of its jobs that starts running or ends: a JSON array of {"job": id, "state": state} (R-C5)';

-- At most this many jobs in one payload: an entry is at most 52 bytes
-- ({"job": <19 digits>, "state": "succeeded"}, and ", "), so a payload
-- stays below 8000 bytes, PostgreSQL's limit.
CREATE FUNCTION tide._notice_jobs_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 150 $$;
COMMENT ON FUNCTION tide._notice_jobs_max() IS
    'the most jobs one notice payload names (150: below 8000 bytes, PostgreSQL''s payload limit)';

-- The notices for these job changes (owners, ids and states side by side):
-- one per owner and each tide._notice_jobs_max() of its jobs, in owner and
-- job order.
CREATE FUNCTION tide._job_notices(owners text[], ids bigint[], states text[])
    RETURNS TABLE(channel text, payload text)
    LANGUAGE sql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT tide._owner_channel_of(x.owner),
       pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('job', x.id, 'state', x.state) ORDER BY x.id)::text
  FROM (SELECT o.owner, o.id, o.state,
               (pg_catalog.row_number() OVER (PARTITION BY o.owner ORDER BY o.id) - 1)
                   OPERATOR(pg_catalog./) tide._notice_jobs_max() AS part
          FROM unnest(owners, ids, states) AS o(owner, id, state)) x
 GROUP BY x.owner, x.part
 ORDER BY x.owner, x.part
$$;
COMMENT ON FUNCTION tide._job_notices(text[], bigint[], text[]) IS
    'the (channel, payload) notices for job changes: per owner, a JSON array of {"job", "state"} of at most tide._notice_jobs_max() jobs (R-C5)';

-- One statement per changing statement, whatever the number of jobs: the
-- jobs that started running or ended, grouped per owner.  A statement
-- that changed no state to one of those (most of them) stops at the first
-- scan.  The scheduling cycle's own placement fires no triggers, but it
-- only makes jobs allocated.  Notices are sent at commit, and only then.
CREATE FUNCTION tide._jobs_notify() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF tide._restoring() THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM new_jobs n WHERE n.state IN ('running', 'succeeded', 'failed', 'cancelled') LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    -- dynamic, so that the join fits this statement's transition tables
    EXECUTE $q$
        SELECT pg_catalog.count(pg_catalog.pg_notify(x.channel, x.payload))
          FROM (SELECT pg_catalog.array_agg(n.owner) AS owners, pg_catalog.array_agg(n.id) AS ids,
                       pg_catalog.array_agg(n.state) AS states
                  FROM new_jobs n JOIN old_jobs o ON o.id = n.id
                 WHERE n.state <> o.state
                   AND n.state IN ('running', 'succeeded', 'failed', 'cancelled')) c,
               tide._job_notices(c.owners, c.ids, c.states) x $q$;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tide._jobs_notify() IS
    'statement trigger: notifies the owners of the jobs that started running or ended, one NOTIFY per owner and 150 jobs (R-C5)';
CREATE TRIGGER jobs_notify AFTER UPDATE ON tide.jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tide._jobs_notify();
