-- bench/submit_fixes.sql, and without the foreign key from tide.jobs to
-- tide.queues, for measurement only: every submission takes a KEY SHARE
-- lock on its queue's row, so concurrent submitters to one queue turn that
-- lock into a new MultiXact per submission on one shared tuple.  The
-- before-insert trigger already refuses an unknown queue; what the key
-- adds is refusing to delete or rename a queue that has jobs, which a
-- trigger on tide.queues could do instead.
\ir submit_fixes.sql
ALTER TABLE tide.jobs DROP CONSTRAINT jobs_queue_fkey;
