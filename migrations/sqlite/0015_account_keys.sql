-- 0015_account_keys: storage accounts and their keys, shared by every
-- replica on the database (blobgw account add/remove/rotate-key; serve
-- seeds it from the configuration). Keep equivalent to
-- postgres/0015_account_keys.sql.

-- key1 and key2 hold a key as stored: its base64 text, or, when
-- BLOBGW_KEY_ENCRYPTION_KEY was set, "aesgcm1:" and the AES-GCM sealed
-- key. key2 is '' for an account with one key. generation is the
-- account_keys_generation value of the account's last change.
CREATE TABLE account_keys (
    name       TEXT PRIMARY KEY,
    key1       TEXT NOT NULL,
    key2       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    generation INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- One counter, bumped by every change to account_keys (also a removal,
-- which leaves no row behind): a replica polls this one row and rereads
-- the accounts only when it moved.
CREATE TABLE account_keys_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
) STRICT;
INSERT INTO account_keys_generation (id, generation) VALUES (1, 0);
