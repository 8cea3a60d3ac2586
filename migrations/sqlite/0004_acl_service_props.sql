-- 0004_acl_service_props: container stored access policies and the Blob
-- service properties shared by every replica. Keep equivalent to
-- postgres/0004_acl_service_props.sql.

-- acl is the JSON text of []leasedb.SignedIdentifier (id, start, expiry,
-- permission; at most 5); NULL or '' when the container has none.
ALTER TABLE containers ADD COLUMN acl TEXT;

-- One Blob service properties document (the StorageServiceProperties XML
-- as Set Blob Service Properties stored it) per account; no row means the
-- defaults. CORS rules are read from it by every replica.
CREATE TABLE service_properties (
    account TEXT NOT NULL PRIMARY KEY,
    doc     TEXT NOT NULL
) STRICT, WITHOUT ROWID;
