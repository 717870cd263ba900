-- Secrets the server derives values from instead of storing them (wake
-- tokens): one row per name, created once by whichever process asks first,
-- never changed.
CREATE TABLE secrets (
    name       TEXT    NOT NULL PRIMARY KEY,
    value      BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
