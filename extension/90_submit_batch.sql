-- ---------------------------------------------------------------- batch submit
-- One call for many one-role jobs of one queue: the same rows, checks and
-- triggers as tide.submit() once per job, but one statement per table
-- instead of one function call, two inserts and their plans per job.
CREATE FUNCTION tide.submit_many(
    queue         text,
    requests      tide.resvec[],
    commands      text[] DEFAULT NULL,
    names         text[] DEFAULT NULL,
    replicas      integer DEFAULT 1,
    priority      integer DEFAULT 0,
    idle          boolean DEFAULT false,
    service_type  text DEFAULT NULL,
    preemptable   boolean DEFAULT true,
    gpu_type      text DEFAULT NULL,
    node_selector jsonb DEFAULT '{}',
    time_limit    interval DEFAULT NULL,
    max_retries   integer DEFAULT 0,
    on_evict      text DEFAULT 'requeue',
    warn_before   interval DEFAULT NULL,
    grace_period  interval DEFAULT NULL)
    RETURNS bigint[]
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n integer := coalesce(cardinality(requests), 0);
    ids bigint[];
BEGIN
    IF queue IS NULL THEN
        RAISE EXCEPTION 'queue must not be NULL'
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Name one of the queues in tide.queues.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    IF n > 100000 THEN
        RAISE EXCEPTION 'requests has % elements, at most 100000 are accepted in one call', n
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Submit larger batches in several calls.';
    END IF;
    IF array_position(requests, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'request % of requests is NULL', array_position(requests, NULL)
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Give the per-replica resources of every job, e.g. ''cpu=4, memory=16Gi, gpu=1''.';
    END IF;
    IF commands IS NOT NULL AND cardinality(commands) <> n THEN
        RAISE EXCEPTION 'commands has % elements for % requests', cardinality(commands), n
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give one command per request, or NULL.';
    END IF;
    IF names IS NOT NULL AND cardinality(names) <> n THEN
        RAISE EXCEPTION 'names has % elements for % requests', cardinality(names), n
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give one name per request, or NULL.';
    END IF;
    -- NULL means the default, as for tide.submit (docs/policy.md)
    IF coalesce(replicas, 1) < 1 THEN
        RAISE EXCEPTION 'replicas must be at least 1, not %', replicas
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Identity values are drawn in the order the rows are produced, so the
    -- ids sorted ascending belong to the requests in array order.
    WITH ins AS (
        INSERT INTO tide.jobs (name, queue, priority, service_type, preemptable, idle,
                               node_selector, gpu_type, time_limit, max_retries, on_evict, command,
                               warn_before, grace_period)
        SELECT submit_many.names[i], submit_many.queue, coalesce(submit_many.priority, 0),
               submit_many.service_type, coalesce(submit_many.preemptable, true),
               coalesce(submit_many.idle, false), coalesce(submit_many.node_selector, '{}'),
               submit_many.gpu_type, submit_many.time_limit, coalesce(submit_many.max_retries, 0),
               coalesce(submit_many.on_evict, 'requeue'), submit_many.commands[i],
               submit_many.warn_before, submit_many.grace_period
          FROM generate_series(1, n) i
         ORDER BY i
        RETURNING id)
    SELECT array_agg(ins.id ORDER BY ins.id) INTO ids FROM ins;
    INSERT INTO tide.job_tasks (job_id, role, replicas, request)
    SELECT ids[i], 'main', coalesce(submit_many.replicas, 1), submit_many.requests[i]
      FROM generate_series(1, n) i;
    RETURN ids;
END
$$;
COMMENT ON FUNCTION tide.submit_many(text, tide.resvec[], text[], text[], integer, integer, boolean, text,
                                     boolean, text, jsonb, interval, integer, text, interval, interval) IS
    'submits one one-role job per element of requests (with the command and name of the same index) to a queue in one call and returns their ids in the same order; the other settings apply to every job';
REVOKE ALL ON FUNCTION tide.submit_many(text, tide.resvec[], text[], text[], integer, integer, boolean, text,
                                        boolean, text, jsonb, interval, integer, text, interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.submit_many(text, tide.resvec[], text[], text[], integer, integer, boolean, text,
                                           boolean, text, jsonb, interval, integer, text, interval, interval)
    TO tide_submitter, tide_admin;
