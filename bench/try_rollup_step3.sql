-- An experiment for bench/launcher_throughput.sh (BENCH_SETUP_SQL=bench/try_rollup_step3.sql):
-- tide._rollup_jobs as in extension/25_state_machine.sql, with step 3 (allocated -> running)
-- written as one aggregate over allocations_job_idx instead of NOT EXISTS / EXISTS per job,
-- whose plan scans allocations_live_node_idx on state.  Proposed for 25_state_machine.sql;
-- delete this file once that change is in (docs/benchmarks.md, "Launchers").
CREATE OR REPLACE FUNCTION tide._rollup_jobs(job_ids bigint[], failed_allocs bigint[], lost_allocs bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    ids bigint[];
    reasons text[];
    goals text[];
    finished bigint[];
BEGIN
    -- 1. The first non-zero exit fails an allocated or running job; the
    --    node it failed on is avoided by its retry.
    WITH f AS (
        SELECT DISTINCT ON (a.job_id) a.job_id, a.node, a.exit_code,
               pg_catalog.format('replica %s of role %s exited with code %s on node %s',
                                 a.replica, a.role, a.exit_code, a.node) AS reason
          FROM tide.allocations a
         WHERE a.id = ANY (failed_allocs)
         ORDER BY a.job_id, a.released_at, a.id
    ), u AS (
        UPDATE tide.jobs j
           SET state = 'failed', state_reason = f.reason, exit_code = f.exit_code,
               finished_at = pg_catalog.now(),
               avoid_nodes = CASE WHEN f.node = ANY (j.avoid_nodes) THEN j.avoid_nodes
                                  ELSE j.avoid_nodes || f.node END
          FROM f
         WHERE j.id = f.job_id AND j.state IN ('allocated', 'running')
        RETURNING j.id
    )
    SELECT pg_catalog.array_agg(u.id ORDER BY u.id) INTO ids FROM u;
    IF ids IS NOT NULL THEN
        -- Its other replicas are told to stop (a job that failed keeps no
        -- evict_goal: it is already final).
        INSERT INTO tide.evictions (job_id, cycle_id, reason, goal)
        SELECT DISTINCT a.job_id, tide._current_cycle(), 'gang member failed', 'fail'
          FROM tide.allocations a
         WHERE a.job_id = ANY (ids) AND a.state IN ('assigned', 'running');
        UPDATE tide.allocations a
           SET state = 'releasing', release_reason = 'gang member failed'
         WHERE a.job_id = ANY (ids) AND a.state IN ('assigned', 'running');
        PERFORM tide._create_retries(ids);
    END IF;

    -- 2. A replica released without exiting (a lost node) interrupts the
    --    job: with retries left it fails and is retried, else its on_evict.
    SELECT pg_catalog.array_agg(x.job_id ORDER BY x.job_id),
           pg_catalog.array_agg(x.reason ORDER BY x.job_id),
           pg_catalog.array_agg(x.goal ORDER BY x.job_id)
      INTO ids, reasons, goals
      FROM (SELECT DISTINCT ON (a.job_id) a.job_id,
                   pg_catalog.format('replica %s of role %s lost on node %s: %s',
                                     a.replica, a.role, a.node, coalesce(a.release_reason, 'released')) AS reason,
                   CASE WHEN j.attempt <= j.max_retries THEN 'fail' ELSE j.on_evict END AS goal
              FROM tide.allocations a JOIN tide.jobs j ON j.id = a.job_id
             WHERE a.id = ANY (lost_allocs) AND j.state IN ('allocated', 'running')
             ORDER BY a.job_id, a.released_at, a.id) x;
    IF ids IS NOT NULL THEN
        UPDATE tide.jobs j
           SET avoid_nodes = j.avoid_nodes || l.nodes
          FROM (SELECT a.job_id, pg_catalog.array_agg(DISTINCT a.node) AS nodes
                  FROM tide.allocations a
                 WHERE a.id = ANY (lost_allocs) AND a.job_id = ANY (ids)
                 GROUP BY a.job_id) l
         WHERE j.id = l.job_id AND NOT (j.avoid_nodes @> l.nodes);
        PERFORM tide._evict(ids, reasons, goals);
    END IF;

    -- 3. Every replica started: allocated -> running.
    UPDATE tide.jobs j
       SET state = 'running', state_reason = 'all replicas started', started_at = pg_catalog.now()
      FROM (SELECT a.job_id FROM tide.allocations a
             WHERE a.job_id = ANY (job_ids)
             GROUP BY a.job_id
            HAVING NOT pg_catalog.bool_or(a.state = 'assigned') AND pg_catalog.bool_or(a.state = 'running')) r
     WHERE j.id = r.job_id AND j.state = 'allocated';

    -- 4. Every replica exited 0: succeeded.
    UPDATE tide.jobs j
       SET state = 'succeeded', state_reason = 'all replicas exited 0', exit_code = 0,
           finished_at = pg_catalog.now()
     WHERE j.id = ANY (job_ids) AND j.state IN ('allocated', 'running')
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = j.id AND a.state <> 'released')
       AND EXISTS (SELECT 1 FROM tide.allocations a
                    WHERE a.job_id = j.id AND a.release_reason = 'exited' AND a.exit_code = 0);

    -- 5. Evictions whose allocations are all released reach their goal.
    WITH done AS (
        UPDATE tide.jobs j
           SET state = CASE j.evict_goal WHEN 'requeue' THEN 'pending'
                                         WHEN 'fail' THEN 'failed'
                                         ELSE 'cancelled' END,
               state_reason = CASE j.evict_goal
                                  WHEN 'requeue' THEN 'requeued after eviction: ' || coalesce(j.state_reason, 'evicted')
                                  WHEN 'fail' THEN 'failed by eviction: ' || coalesce(j.state_reason, 'evicted')
                                  ELSE 'cancelled' END,
               pending_reason = CASE j.evict_goal WHEN 'requeue' THEN 'requeued after eviction' END,
               finished_at = CASE WHEN j.evict_goal = 'requeue' THEN NULL ELSE pg_catalog.now() END,
               started_at = CASE WHEN j.evict_goal = 'requeue' THEN NULL ELSE j.started_at END,
               evict_goal = NULL
         WHERE j.id = ANY (job_ids) AND j.state = 'evicting'
           AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                            WHERE a.job_id = j.id AND a.state <> 'released')
        RETURNING j.id, j.state
    )
    SELECT pg_catalog.array_agg(done.id ORDER BY done.id) FILTER (WHERE done.state = 'failed')
      INTO finished FROM done;
    IF finished IS NOT NULL THEN
        PERFORM tide._create_retries(finished);
    END IF;

    -- 6. Evictions of jobs with nothing live left are acknowledged.
    UPDATE tide.evictions e
       SET acked_at = pg_catalog.now()
     WHERE e.job_id = ANY (job_ids) AND e.acked_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM tide.allocations a
                        WHERE a.job_id = e.job_id AND a.state <> 'released');
END
$function$

;
