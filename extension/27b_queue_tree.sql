-- Queue trees (R-O5, R-A3, R-E7): a queue may sit under a parent queue of
-- the same resource group.  Jobs live only in leaves; a child's quota is
-- carved out of its parent's; a capability at any level caps the whole
-- subtree.  The column is added here, after the table, so that the concept
-- stays in one file; the checks on it follow below.

ALTER TABLE tide.queues
    ADD COLUMN parent text REFERENCES tide.queues (name) ON UPDATE CASCADE ON DELETE RESTRICT;
COMMENT ON COLUMN tide.queues.parent IS
    'the queue this one sits under (same resource group); NULL: a top queue. Jobs live only in leaf queues; children''s quotas add up to at most their parent''s; a capability caps the whole subtree (R-O5, R-A3)';
CREATE INDEX queues_parent_idx ON tide.queues (parent);
