-- Per-owner limits (R-A4): the most one owner's jobs may hold in a queue,
-- as Slurm's MaxTRESPerUser.  A column of tide.queues added here, after the
-- table, so that its own concept stays in one file (docs/design/
-- organisations.md, section 6.1); the row checks are in
-- tide._queues_before_write (27_queue_checks.sql).

ALTER TABLE tide.queues ADD COLUMN owner_capability tide.resvec;
COMMENT ON COLUMN tide.queues.owner_capability IS
    'the most one owner''s jobs (borrowing and idle ones included) may hold in the queue, on the resources it names; a job that would take its owner past it waits, naming the limit (R-A4); NULL: no such limit';
