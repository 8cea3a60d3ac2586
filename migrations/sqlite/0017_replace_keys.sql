-- 0017_replace_keys: nothing for SQLite. Postgres's 0017 adds a function
-- its driver's LockForReplace calls (postgres/0017_replace_keys.sql); this
-- file keeps the two dialects' schema versions in step.
SELECT 1;
