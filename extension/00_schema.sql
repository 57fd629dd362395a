-- The schema tide is created by CREATE EXTENSION (pg_tide.control names it).
-- Nothing in this script depends on the caller's search_path: every object
-- is schema-qualified, and functions pin their own search_path.
COMMENT ON SCHEMA tide IS 'pg_tide: GPU and ML job scheduler';
