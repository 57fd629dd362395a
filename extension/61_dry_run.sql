-- tide.dry_run(): the decisions the next cycle would make now, as rows,
-- from the same load and engine as tide.run_cycle() (src/dry_run.c),
-- writing nothing (docs/dry_run.md).
--
-- kind: 'place' (a replica placed: role, replica, node, gpus, gpu_milli,
-- resources), 'evict' (a victim job: preemptor_job_id, rule), 'hold'
-- (resources held: for a preemptor while its victims stop, rule R-E6, or a
-- reservation, rule R-L2, node NULL for queue headroom), 'pending' and
-- 'unschedulable' (a job not placed, with its reasons), 'lost' (a node the
-- cycle would first mark down, R-C3).
CREATE FUNCTION tide.dry_run(
        OUT kind text, OUT job_id bigint, OUT role text, OUT replica integer,
        OUT node text, OUT gpus tide.gpumask, OUT gpu_milli integer,
        OUT resources tide.resvec, OUT preemptor_job_id bigint,
        OUT rule text, OUT reason text)
    RETURNS SETOF record
    LANGUAGE c VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS 'MODULE_PATHNAME', 'tide_dry_run';
COMMENT ON FUNCTION tide.dry_run() IS
    'the decisions the next tide.run_cycle() would make now (placements, evictions, holds, pending reasons), one row each, computed by the same load and engine; writes nothing, consumes no cycle id; errors with 55P03 while a cycle runs';
REVOKE ALL ON FUNCTION tide.dry_run() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tide.dry_run() TO tide_admin;
