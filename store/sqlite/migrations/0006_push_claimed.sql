-- A push configuration's due_at is in the future both while a claim holds
-- it (the end of the claim's lease) and while it waits out a retry's
-- backoff. claimed tells them apart: 1 from ClaimPushDeliveries to the
-- SettlePush that ends the claim. The process that opens the file first
-- frees the claims left by an owner that ended without settling them
-- (docs/decisions/0082-sqlite-one-owner.md) and leaves backoffs alone.
ALTER TABLE push_configs ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
