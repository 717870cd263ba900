-- Secrets the server derives values from instead of storing them (wake
-- tokens): one row per name, created once by whichever node asks first,
-- never changed.
CREATE TABLE secrets (
    name       text        NOT NULL PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
