-- 0012_container_soft_delete: soft-deleted containers (Delete Container
-- with container_delete_retention_days set, Restore Container). Keep
-- equivalent to sqlite/0012_container_soft_delete.sql.

-- A soft-deleted container keeps its container row and every row under it
-- (blobs, snapshots, staged blocks, the tag index, adopted keys), moved
-- from account to the hidden account "<account>/<version>" (a '/' never
-- occurs in an account name, so no request can address it, and every
-- query of the live account passes it by). Its rows still hold their
-- backend objects, so the collector, fsck and the leak checks see them as
-- references. One row here per deleted container names it; Restore
-- Container moves the rows back, and once expires_at passes (database
-- clock) the collector deletes them as a Delete Container without
-- retention does. version is Azure's deleted container version: 16 uppercase hex
-- digits of the deletion time in 100 ns units since 1601, unique per name.
CREATE TABLE deleted_containers (
    account    TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    version    TEXT COLLATE "C" NOT NULL,
    deleted_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account, name, version)
);

CREATE INDEX deleted_containers_expires ON deleted_containers (expires_at);

-- Moving a container's rows moves its adopted keys' holders: without an
-- index that would read every adopted key.
CREATE INDEX adopted_keys_holder ON adopted_keys (account, container);
