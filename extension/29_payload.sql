-- A job's payload: env and workdir (what the launcher exports and where it
-- starts the command, docs/launcher.md) and labels (free metadata for
-- analysts' queries).  One check, tide._check_payload, for every writer:
-- the jobs' insert trigger (23_job_checks.sql) calls it for each new job,
-- tide.submit with its arguments before it inserts, and the update
-- trigger below for a changed payload.

-- The limits (bytes of the JSON text, of the path).
CREATE FUNCTION tide._payload_max(what text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
SELECT CASE what WHEN 'env' THEN 65536 WHEN 'labels' THEN 65536 WHEN 'workdir' THEN 4095 END
$$;
COMMENT ON FUNCTION tide._payload_max(text) IS
    'the largest env (65536 bytes of JSON text), labels (65536 bytes) and workdir (4095 bytes, PATH_MAX less its NUL) a job may have';

-- Are env, workdir and labels what the launcher can use?  env: an object
-- whose names a shell can export (POSIX: letters, digits and underscores,
-- not starting with a digit), none of them one the launcher sets itself
-- (CUDA_VISIBLE_DEVICES and TIDE_*: refused rather than silently
-- overridden), each value a string, a number or a boolean (exported as its
-- JSON text: 4 as "4", true as "true"); workdir NULL or an absolute path;
-- labels an object.  The first bad name (in name order) is named, its
-- value cut to a readable length.  True or an error.
CREATE FUNCTION tide._check_payload(env jsonb, workdir text, labels jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    bad record;
    size integer;
BEGIN
    IF env IS NULL OR pg_catalog.jsonb_typeof(env) <> 'object' THEN
        RAISE EXCEPTION 'env must be a JSON object, not %', coalesce(pg_catalog.jsonb_typeof(env), 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'Give the variables as an object of names to text values, e.g. ''{"EPOCHS": "10"}''; ''{}'' exports none.';
    END IF;
    IF env <> '{}' THEN
        size := pg_catalog.octet_length(env::text);
        IF size > tide._payload_max('env') THEN
            RAISE EXCEPTION 'env is % bytes long, the limit is %', size, tide._payload_max('env')
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Pass large inputs in a file (in workdir) and its path in a variable.';
        END IF;
        SELECT e.key, e.value,
               CASE WHEN e.key !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN 'name'
                    WHEN e.key = 'CUDA_VISIBLE_DEVICES' OR e.key LIKE 'TIDE\_%' THEN 'ours'
                    ELSE 'value' END AS problem
          INTO bad
          FROM pg_catalog.jsonb_each(env) e
         WHERE e.key !~ '^[A-Za-z_][A-Za-z0-9_]*$'
            OR e.key = 'CUDA_VISIBLE_DEVICES' OR e.key LIKE 'TIDE\_%'
            OR pg_catalog.jsonb_typeof(e.value) NOT IN ('string', 'number', 'boolean')
         ORDER BY e.key
         LIMIT 1;
        IF bad.problem = 'name' THEN
            RAISE EXCEPTION 'env name "%" cannot be exported by a shell', tide._cut(bad.key)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'A variable name is letters, digits and underscores, and does not start with a digit.';
        ELSIF bad.problem = 'ours' THEN
            RAISE EXCEPTION 'env variable "%" is set by the launcher', tide._cut(bad.key)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The launcher sets CUDA_VISIBLE_DEVICES and every TIDE_* variable itself (docs/launcher.md); choose another name.';
        ELSIF bad.problem = 'value' THEN
            RAISE EXCEPTION 'env variable "%" must be a string, a number or a boolean, not %', tide._cut(bad.key),
                            CASE WHEN bad.value = 'null' THEN 'null'
                                 ELSE pg_catalog.jsonb_typeof(bad.value) OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) tide._cut(bad.value::text) END
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Give its value as text (a number or a boolean is exported as its JSON text); leave the name out to export nothing.';
        END IF;
    END IF;
    IF workdir IS NOT NULL THEN
        IF pg_catalog.left(workdir, 1) <> '/' THEN
            RAISE EXCEPTION 'workdir "%" is not an absolute path', tide._cut(workdir)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Give the directory from the root, as the node sees it (e.g. /data/runs/e42); NULL starts the command in the launcher''s own directory.';
        END IF;
        size := pg_catalog.octet_length(workdir);
        IF size > tide._payload_max('workdir') THEN
            RAISE EXCEPTION 'workdir is % bytes long, the limit is %', size, tide._payload_max('workdir')
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'A path the system can enter is shorter (PATH_MAX).';
        END IF;
    END IF;
    IF labels IS NULL OR pg_catalog.jsonb_typeof(labels) <> 'object' THEN
        RAISE EXCEPTION 'labels must be a JSON object, not %', coalesce(pg_catalog.jsonb_typeof(labels), 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'Give free metadata as an object, e.g. ''{"experiment": "e42"}''; ''{}'' is none.';
    END IF;
    IF labels <> '{}' THEN
        size := pg_catalog.octet_length(labels::text);
        IF size > tide._payload_max('labels') THEN
            RAISE EXCEPTION 'labels are % bytes long, the limit is %', size, tide._payload_max('labels')
                USING ERRCODE = 'program_limit_exceeded',
                      HINT = 'Labels are for short facts to query by; keep large data elsewhere and label the job with its key.';
        END IF;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION tide._check_payload(jsonb, text, jsonb) IS
    'refuses a payload the launcher cannot use: env not an object of shell-exportable names (none of CUDA_VISIBLE_DEVICES, TIDE_*) to strings, numbers or booleans, or above 64 kB; workdir not an absolute path or above 4095 bytes; labels not an object or above 64 kB';

-- A changed payload is checked as a new one; env and workdir are what the
-- launcher starts the command with, so they change only while the job is
-- pending (a running command would not see the change; a retry copies the
-- job as it is then).  Labels are metadata: they may change at any time.
CREATE FUNCTION tide._jobs_payload_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    IF OLD.state <> 'pending'
       AND (NEW.env IS DISTINCT FROM OLD.env OR NEW.workdir IS DISTINCT FROM OLD.workdir) THEN
        RAISE EXCEPTION 'env and workdir of job % cannot change: the job is %', OLD.id, OLD.state
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Only a pending job''s env and workdir may change (the launcher reads them when it starts the job); labels may change at any time.';
    END IF;
    ok := tide._check_payload(NEW.env, NEW.workdir, NEW.labels);
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._jobs_payload_update() IS
    'trigger: checks a changed env, workdir or labels as tide._check_payload does, and refuses a change of env or workdir once the job has left pending';
CREATE TRIGGER jobs_payload_update BEFORE UPDATE OF env, workdir, labels ON tide.jobs
    FOR EACH ROW
    WHEN (NEW.env IS DISTINCT FROM OLD.env OR NEW.workdir IS DISTINCT FROM OLD.workdir
          OR NEW.labels IS DISTINCT FROM OLD.labels)
    EXECUTE FUNCTION tide._jobs_payload_update();
