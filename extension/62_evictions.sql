-- Evictions (R-E1 to R-E6, R-C3; docs/evictions.md): tide._evict, the one
-- way work is stopped (by the cycle, a cancel, a failed gang member, a lost
-- node), and what a cycle holds for the job it evicted for.

CREATE FUNCTION tide._evict(job_ids bigint[], reasons text[], goals text[] DEFAULT NULL,
                            preemptor_ids bigint[] DEFAULT NULL)
    RETURNS bigint[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    evicted bigint[];
BEGIN
    -- jobs: allocated or running -> evicting, goal given or the job's on_evict
    WITH d AS (
        SELECT u.job_id, u.reason, u.goal, u.preemptor
          FROM unnest(job_ids, reasons, goals, preemptor_ids) AS u(job_id, reason, goal, preemptor)
    ), e AS (
        UPDATE tide.jobs j
           SET state = 'evicting',
               evict_goal = coalesce(d.goal, j.on_evict),
               state_reason = d.reason
          FROM d
         WHERE j.id = d.job_id AND j.state IN ('allocated', 'running')
        RETURNING j.id, j.evict_goal
    )
    SELECT pg_catalog.array_agg(e.id ORDER BY e.id) INTO evicted FROM e;
    IF evicted IS NULL THEN
        RETURN '{}';
    END IF;

    INSERT INTO tide.evictions (job_id, cycle_id, reason, preemptor_job_id, goal)
    SELECT d.job_id, tide._current_cycle(), coalesce(d.reason, 'evicted'), d.preemptor, j.evict_goal
      FROM unnest(job_ids, reasons, preemptor_ids) AS d(job_id, reason, preemptor)
      JOIN tide.jobs j ON j.id = d.job_id
     WHERE d.job_id = ANY (evicted)
     ORDER BY d.job_id;

    UPDATE tide.allocations a
       SET state = 'releasing',
           release_reason = coalesce(d.reason, 'evicted')
      FROM unnest(job_ids, reasons) AS d(job_id, reason)
     WHERE a.job_id = d.job_id AND d.job_id = ANY (evicted)
       AND a.state IN ('assigned', 'running');

    -- A job without live allocations has nothing to wait for.
    PERFORM tide._rollup_jobs(evicted, '{}', '{}');
    RETURN evicted;
END
$$;
COMMENT ON FUNCTION tide._evict(bigint[], text[], text[], bigint[]) IS
    'evicts jobs set-based (R-E5): allocated or running jobs become evicting with the goal given (NULL: their on_evict), one tide.evictions row each, their live allocations releasing; returns the ids evicted';
REVOKE ALL ON FUNCTION tide._evict(bigint[], text[], text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide._evict(bigint[], text[], text[], bigint[]) TO tide_admin;

-- When a cycle evicts jobs for a pending job (the preemptor), the place its
-- dry run found is held for it until it is placed there: the victims' part
-- is in use until their launchers confirm with tide.evicted, and the part
-- that was already free is written here so that the next cycles hold it
-- for the preemptor alone (R-E6).  The cycle writes and deletes these rows;
-- nothing else needs to.

CREATE TABLE tide.eviction_holds (
    job_id    bigint NOT NULL REFERENCES tide.jobs (id) ON DELETE CASCADE,
    role      text NOT NULL,
    replica   integer NOT NULL,
    node      text NOT NULL REFERENCES tide.nodes (name) ON UPDATE CASCADE ON DELETE CASCADE,
    resources tide.resvec NOT NULL,
    gpus      tide.gpumask NOT NULL DEFAULT '',
    gpu_milli integer CONSTRAINT eviction_holds_gpu_milli_check CHECK (gpu_milli BETWEEN 1 AND 999),
    -- not a foreign key: tide.cycles is partitioned by time and loses old
    -- partitions to retention (like the other cycle_id columns)
    cycle_id  bigint,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (job_id, role, replica)
);
COMMENT ON TABLE tide.eviction_holds IS
    'Resources held for a pending job that evicted others (R-E6): one row per replica of the placement its dry run found; only that job may use them until it is placed, while its victims stop and for one cycle after';
COMMENT ON COLUMN tide.eviction_holds.job_id IS 'the preemptor: the pending job the resources are held for';
COMMENT ON COLUMN tide.eviction_holds.role IS 'the task role and replica (0-based) of the preemptor that will run here';
COMMENT ON COLUMN tide.eviction_holds.cycle_id IS 'the cycle that evicted for it (its tide.evictions rows have the same cycle_id and preemptor_job_id)';
CREATE INDEX evictions_open_preemptor_idx ON tide.evictions (preemptor_job_id) WHERE acked_at IS NULL;

GRANT SELECT ON tide.eviction_holds TO tide_admin, tide_reader;
GRANT INSERT, DELETE ON tide.eviction_holds TO tide_admin;

SELECT pg_catalog.pg_extension_config_dump('tide.eviction_holds', '');
