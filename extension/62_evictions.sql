-- Evictions in the scheduling cycle (R-E1 to R-E6, R-C3; docs/evictions.md).
--
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
