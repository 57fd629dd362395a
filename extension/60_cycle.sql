-- The scheduling cycle: tide.run_cycle() (src/cycle.c around the policy
-- engine in src/engine; the policy is docs/scheduling.md).

-- What a cycle measured, beside the contract's counters (docs/benchmarks.md).
ALTER TABLE tide.cycles
    ADD COLUMN IF NOT EXISTS jobs_unschedulable integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS allocations_made integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS holds integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS load_ms double precision,
    ADD COLUMN IF NOT EXISTS decide_ms double precision,
    ADD COLUMN IF NOT EXISTS write_ms double precision;
COMMENT ON COLUMN tide.cycles.jobs_unschedulable IS 'pending jobs this cycle found can never fit as things stand (R-A2)';
COMMENT ON COLUMN tide.cycles.allocations_made IS 'allocation rows this cycle inserted (one per placed replica)';
COMMENT ON COLUMN tide.cycles.holds IS 'reservation holds this cycle made for reserving jobs (R-L2)';
COMMENT ON COLUMN tide.cycles.load_ms IS 'milliseconds spent reading nodes, queues, pending jobs and live allocations';
COMMENT ON COLUMN tide.cycles.decide_ms IS 'milliseconds spent in the policy engine';
COMMENT ON COLUMN tide.cycles.write_ms IS 'milliseconds spent writing allocations, job states and pending reasons';

CREATE FUNCTION tide.run_cycle() RETURNS bigint
    LANGUAGE c VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'tide_run_cycle';
COMMENT ON FUNCTION tide.run_cycle() IS
    'one scheduling cycle in the caller''s transaction: places pending jobs (R-O1..R-O4, R-A1, R-A2, R-L1..R-L6), records pending reasons (R-C2); returns the cycle id, or NULL at once when another cycle is running (R-C1)';
REVOKE ALL ON FUNCTION tide.run_cycle() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.run_cycle() TO tide_admin;
