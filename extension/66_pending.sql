-- What waits (docs/analysts.md): every pending job with its position in
-- its queue, in the order the cycle walks the queue: non-idle before idle,
-- the retry lane, priority (R-O1..R-O3), and in a queue with
-- owner_fair_share the owner share the job will be taken at before age
-- and id (R-O7, tide._owner_fair_positions; a job the cycle does not load,
-- held or waiting or unschedulable, after those of its priority).  That
-- function answers for the session's role: read inside a SECURITY DEFINER
-- function whose owner sees more, the rows it does not return keep their
-- R-O1 position.
--
-- Not security_invoker: positions count every owner's jobs, then the rows
-- are filtered to the caller's own (admins and readers see all).  The
-- security barrier keeps a caller's functions from seeing rows before the
-- filter.
CREATE VIEW tide.pending WITH (security_barrier = true) AS
SELECT p.job_id, p.name, p.queue, p.owner, p.priority, p.idle, p.retry, p.position,
       p.pending_reason, p.unschedulable, p.waiting_since, p.created_at
  FROM (SELECT j.id AS job_id,
               j.name,
               j.queue,
               j.owner,
               j.priority,
               j.idle,
               j.retry_of IS NOT NULL AS retry,
               coalesce(f.queue_position,
                        pg_catalog.row_number() OVER (
                            PARTITION BY j.queue
                            ORDER BY j.idle, (j.retry_of IS NULL), j.priority DESC, j.created_at, j.id)) AS position,
               -- a waiting job's reason is its own (R-P1..R-P5): the cycle did not see it
               CASE WHEN j.waiting THEN j.pending_reason ELSE coalesce(b.reason, j.pending_reason) END AS pending_reason,
               j.unschedulable,
               coalesce(w.since, j.created_at) AS waiting_since,
               j.created_at
          FROM tide.jobs j
          LEFT JOIN tide._owner_fair_positions() f ON f.job_id = j.id
          -- (a placement the cycle gave back, allocated -> pending, is no new wait)
          LEFT JOIN LATERAL (SELECT max(e.at) AS since FROM tide.job_events e
                              WHERE e.job_id = j.id AND e.new_state = 'pending'
                                AND e.old_state IS DISTINCT FROM 'allocated') w ON true
          -- the latest cycle's reason, when it is not in the job row yet
          LEFT JOIN (SELECT u.job_id, r.reason
                       FROM tide.reason_backlog r, pg_catalog.unnest(r.job_ids) AS u(job_id)) b
                 ON b.job_id = j.id
         WHERE j.state = 'pending') p
 WHERE p.owner = CURRENT_USER
    OR pg_catalog.pg_has_role('tide_admin', 'USAGE')
    OR pg_catalog.pg_has_role('tide_reader', 'USAGE');
COMMENT ON VIEW tide.pending IS
    'pending jobs with their position in their queue among every owner''s jobs (non-idle before idle, retry lane, then priority, age, id: R-O1..R-O3; in a queue with owner_fair_share the owner share at the job''s turn before age: R-O7), the latest cycle''s reason they wait (R-C2, also when not yet in tide.jobs.pending_reason) and since when; a submitter sees its own rows';

GRANT SELECT ON tide.pending TO tide_admin, tide_reader, tide_submitter;
