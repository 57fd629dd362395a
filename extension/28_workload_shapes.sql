-- The typical workload of the frag node order (R-L5, docs/policy.md): the
-- request shapes, with weights, whose room a placement should keep.
--
-- An administrator may set them in tide.workload_shapes, for one resource
-- group or for all.  Where no row applies, the cycle takes the shapes of the
-- last tide.frag_shapes_jobs submitted jobs from tide.recent_shapes, a rollup
-- that the cycle remakes at most every tide.frag_shapes_refresh seconds (and
-- tide.refresh_workload_shapes() at any time): submitting costs nothing more,
-- and a cycle reads a few dozen rows.  Without either, frag uses the pending
-- jobs' own requests.

-- ---------------------------------------------------------------- admin shapes
CREATE TABLE tide.workload_shapes (
    name           text PRIMARY KEY,
    resource_group text,
    request        tide.resvec NOT NULL,
    gpu_type       text,
    node_selector  jsonb NOT NULL DEFAULT '{}'
                   CONSTRAINT workload_shapes_node_selector_check
                   CHECK (pg_catalog.jsonb_typeof(node_selector) = 'object'),
    weight         double precision NOT NULL DEFAULT 1
                   CONSTRAINT workload_shapes_weight_check
                   CHECK (weight > 0 AND weight < 'Infinity' AND weight <> 'NaN')
);
COMMENT ON TABLE tide.workload_shapes IS
    'the typical workload of frag queues (R-L5) as an administrator sets it: request shapes with weights; where a row applies to a cycle''s resource group, tide.recent_shapes is not used';
COMMENT ON COLUMN tide.workload_shapes.name IS 'the administrator''s name of the shape';
COMMENT ON COLUMN tide.workload_shapes.resource_group IS 'the resource group whose cycles use the shape; NULL: every group';
COMMENT ON COLUMN tide.workload_shapes.request IS 'one replica''s request, GPUs included (gpu=8, or a share of one GPU such as gpu=0.5)';
COMMENT ON COLUMN tide.workload_shapes.gpu_type IS 'the card type the shape runs on; NULL: any';
COMMENT ON COLUMN tide.workload_shapes.node_selector IS 'the labels a node must have for the shape, as tide.jobs.node_selector';
COMMENT ON COLUMN tide.workload_shapes.weight IS 'how often the shape is asked for, relative to the other shapes (e.g. replicas a day); frag weighs it by this times its GPUs';
SELECT pg_catalog.pg_extension_config_dump('tide.workload_shapes', '');

CREATE FUNCTION tide._workload_shapes_before_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s text := pg_catalog.format('workload shape "%s"', tide._cut(NEW.name));
    gpu numeric;
    ok boolean;
BEGIN
    IF tide._restoring() THEN
        RETURN NEW;
    END IF;
    ok := tide._check_name('workload shape name', NEW.name);
    ok := tide._check_name('resource_group of ' || s, NEW.resource_group);
    ok := tide._check_name('gpu_type of ' || s, NEW.gpu_type);
    IF NEW.request IS NULL THEN
        RAISE EXCEPTION '% has no request', s
            USING ERRCODE = 'not_null_violation',
                  HINT = 'Give one replica''s request, such as ''cpu=8, memory=64Gi, gpu=1''.';
    END IF;
    gpu := coalesce(tide.get(NEW.request, 'gpu'), 0);
    IF gpu <= 0 THEN
        RAISE EXCEPTION '% asks no GPU: %', s, NEW.request
            USING ERRCODE = 'check_violation',
                  HINT = 'frag weighs a shape by the GPUs it asks; a shape without GPUs would change no node choice.';
    END IF;
    IF gpu > 1 AND gpu <> trunc(gpu) THEN
        RAISE EXCEPTION 'GPU request % of % is not a whole number', gpu, s
            USING ERRCODE = 'check_violation',
                  HINT = 'A request above one GPU must be whole (gpu=2); below one it may be a share of one GPU (gpu=0.5 or gpu=250m).';
    END IF;
    IF pg_catalog.cardinality(tide.resvec_names(NEW.request)) > 64 THEN
        RAISE EXCEPTION '% names % resources, more than 64', s, pg_catalog.cardinality(tide.resvec_names(NEW.request))
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'A cluster offers at most 64 distinct resource names, so no node could hold this request.';
    END IF;
    IF pg_catalog.jsonb_typeof(NEW.node_selector) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'node_selector of % must be a JSON object, not %', s,
                        coalesce(pg_catalog.jsonb_typeof(NEW.node_selector), 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'Give the labels a node must have, e.g. ''{"zone": "a"}''; ''{}'' (the default) selects any node.';
    END IF;
    IF NEW.weight IS NULL OR NOT (NEW.weight > 0 AND NEW.weight < 'Infinity' AND NEW.weight <> 'NaN') THEN
        RAISE EXCEPTION 'weight of % must be a positive finite number, not %', s, coalesce(NEW.weight::text, 'NULL')
            USING ERRCODE = 'check_violation',
                  HINT = 'It is how often the shape is asked for relative to the others; 1 (the default) for all equal.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION tide._workload_shapes_before_write() IS
    'trigger: checks a new or changed workload shape (names, a request with GPUs whole above one, at most 64 resources, node_selector an object, weight positive and finite), naming the shape and the column';
CREATE TRIGGER workload_shapes_before_check BEFORE INSERT OR UPDATE ON tide.workload_shapes
    FOR EACH ROW EXECUTE FUNCTION tide._workload_shapes_before_write();

-- ---------------------------------------------------------------- recent shapes
-- Derived rows, remade whole by each refresh: not dumped.
CREATE TABLE tide.recent_shapes (
    resource_group text NOT NULL,
    request        tide.resvec NOT NULL,
    gpu_type       text,
    node_selector  jsonb NOT NULL,
    weight         double precision NOT NULL,
    jobs           integer NOT NULL
);
COMMENT ON TABLE tide.recent_shapes IS
    'the request shapes of the last tide.frag_shapes_jobs submitted jobs per resource group, the typical workload of frag queues where tide.workload_shapes sets none; remade by tide.refresh_workload_shapes()';
COMMENT ON COLUMN tide.recent_shapes.weight IS 'replicas of the shape among those jobs';
COMMENT ON COLUMN tide.recent_shapes.jobs IS 'jobs among those that asked for the shape';

CREATE TABLE tide.recent_shapes_state (
    one          boolean PRIMARY KEY DEFAULT true CONSTRAINT recent_shapes_state_one CHECK (one),
    refreshed_at timestamptz,
    jobs_read    integer NOT NULL DEFAULT 0
);
COMMENT ON TABLE tide.recent_shapes_state IS
    'one row: when tide.recent_shapes was last remade and from how many jobs';
INSERT INTO tide.recent_shapes_state DEFAULT VALUES;

-- The shapes of the last n jobs by id (the jobs archived since are no
-- longer recent): every role asking GPUs is a shape, weighed by its
-- replicas.  Index ranges of the primary keys of tide.jobs and
-- tide.job_tasks, whatever their size: 3 ms for 1,000 jobs out of 100k.
CREATE FUNCTION tide.refresh_workload_shapes(jobs integer DEFAULT NULL) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n integer := coalesce(jobs, tide._setting('tide.frag_shapes_jobs', '1000')::integer);
    lo bigint;
    nread integer;
    made integer := 0;
BEGIN
    IF n < 0 THEN
        RAISE EXCEPTION 'jobs must not be negative, not %', n
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The shapes come from the last this many submitted jobs; 0 keeps no recent shapes.';
    END IF;
    PERFORM 1 FROM tide.recent_shapes_state FOR UPDATE;
    -- the last n ids, then a range of both primary keys from the lowest
    -- (EXECUTE plans for the value: a generic plan could scan every task)
    SELECT pg_catalog.min(x.id), pg_catalog.count(*) INTO lo, nread
      FROM (SELECT y.id FROM tide.jobs y ORDER BY y.id DESC LIMIT n) x;
    DELETE FROM tide.recent_shapes;
    EXECUTE $q$
    INSERT INTO tide.recent_shapes (resource_group, request, gpu_type, node_selector, weight, jobs)
    SELECT q.resource_group, t.request, j.gpu_type, j.node_selector, pg_catalog.sum(t.replicas),
           pg_catalog.count(DISTINCT j.id)
      FROM tide.jobs j
      JOIN tide.job_tasks t ON t.job_id = j.id
      JOIN tide.queues q ON q.name = j.queue
     WHERE j.id >= $1 AND t.job_id >= $1 AND tide.get(t.request, 'gpu') > 0
     GROUP BY q.resource_group, t.request, j.gpu_type, j.node_selector$q$ USING lo;
    GET DIAGNOSTICS made = ROW_COUNT;
    UPDATE tide.recent_shapes_state SET refreshed_at = pg_catalog.now(), jobs_read = nread;
    RETURN made;
END
$$;
COMMENT ON FUNCTION tide.refresh_workload_shapes(integer) IS
    'remakes tide.recent_shapes from the last jobs submitted (NULL: tide.frag_shapes_jobs, default 1000); returns the shapes made';
REVOKE ALL ON FUNCTION tide.refresh_workload_shapes(integer) FROM PUBLIC;

-- The cycle's refresh: only with a frag queue, at most every max_age, and
-- never waiting for a concurrent cycle that is already at it.  With the
-- owner's rights: tide_admin members run cycles but do not write the rollup
-- themselves.
CREATE FUNCTION tide._refresh_workload_shapes_due(max_age interval, jobs integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tide.queues q WHERE q.placement = 'frag') THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM tide.recent_shapes_state s
      WHERE s.refreshed_at IS NULL OR s.refreshed_at <= pg_catalog.now() - max_age
      FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN tide.refresh_workload_shapes(jobs);
END
$$;
COMMENT ON FUNCTION tide._refresh_workload_shapes_due(interval, integer) IS
    'the cycle''s refresh of tide.recent_shapes: when some queue places by frag and the last refresh is max_age old; skipped while another transaction refreshes; returns the shapes made or NULL';
REVOKE ALL ON FUNCTION tide._refresh_workload_shapes_due(interval, integer) FROM PUBLIC;

-- ---------------------------------------------------------------- privileges
GRANT SELECT ON tide.workload_shapes, tide.recent_shapes, tide.recent_shapes_state TO tide_admin, tide_reader;
GRANT INSERT, UPDATE, DELETE ON tide.workload_shapes TO tide_admin;
GRANT EXECUTE ON FUNCTION tide.refresh_workload_shapes(integer),
                          tide._refresh_workload_shapes_due(interval, integer) TO tide_admin;
