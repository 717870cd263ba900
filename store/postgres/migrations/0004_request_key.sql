-- The request that created a task, apart from its ID (decision 0017): a
-- redelivered first message finds its task by this key, and IDs can be
-- time-ordered. Tasks created before this migration had their key as their
-- ID, so a redelivery of their first message still finds them.
ALTER TABLE tasks ADD COLUMN request_key TEXT;
UPDATE tasks SET request_key = id;
CREATE UNIQUE INDEX tasks_request ON tasks (request_key) WHERE request_key IS NOT NULL;
