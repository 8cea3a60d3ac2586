-- 0017_replace_keys: what LockForReplace (leasedb/postgres/fastput.go)
-- reads of a blob name only when the blob's row names an object: whether
-- the name has snapshots, versions or soft-deleted rows (2) and whether
-- another name shares one of the row's keys (4), plus 1 (read). The
-- statement calls it only for such a row. As subqueries of that
-- statement these four scans were set up (their nodes initialized, their
-- relations and indexes opened) on every run, an inline blob's included,
-- about a tenth of the database's CPU per small Put Blob; a function's
-- statements are planned and started only when it is called. STABLE: its
-- statements read with the snapshot of the statement that calls it, as
-- the subqueries did. Postgres only: sqlite/0017_replace_keys.sql keeps
-- the versions in step.
CREATE FUNCTION blob_replace_keys(acct TEXT, cont TEXT, nm TEXT, ext TEXT) RETURNS INTEGER
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN 1
        + CASE WHEN EXISTS (SELECT 1 FROM snapshots WHERE account = acct AND container = cont AND name = nm)
            OR EXISTS (SELECT 1 FROM versions WHERE account = acct AND container = cont AND name = nm)
            OR EXISTS (SELECT 1 FROM deleted_blobs WHERE account = acct AND container = cont AND name = nm) THEN 2 ELSE 0 END
        + CASE WHEN EXISTS (SELECT 1 FROM extent_shares
            WHERE key IN (SELECT e->>'k' FROM json_array_elements(ext::json) AS e)) THEN 4 ELSE 0 END;
END
$$;
