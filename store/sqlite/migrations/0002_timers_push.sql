-- 0002: timers on tasks, and the push outbox.
--
-- Timer columns are unix milliseconds like every other time, but NULL
-- (not 0) when unset, so that the partial indexes below hold only the tasks
-- whose timer is set: a paused task without a timer costs them nothing.

-- The engine's state of a pause (expiry action, reminders sent, holds):
-- opaque JSON like the other BLOB columns, NULL when none.
ALTER TABLE tasks ADD COLUMN pause BLOB;

-- When the engine must look at the task again: the question's expiry or
-- its next reminder (wake_at), the next release of a hold (hold_at).
ALTER TABLE tasks ADD COLUMN wake_at INTEGER;
ALTER TABLE tasks ADD COLUMN hold_at INTEGER;

-- DueTasks and NextDue: only tasks whose timer is set are in these
-- indexes, and they are read in timer order from the earliest, so a sweep
-- costs O(due tasks), not O(paused tasks); id breaks ties so that the
-- order is total without a sort.
CREATE INDEX tasks_wake ON tasks (wake_at, id) WHERE wake_at IS NOT NULL;
CREATE INDEX tasks_hold ON tasks (hold_at, id) WHERE hold_at IS NOT NULL;

-- A log entry with notify = 1 goes to the task's push configurations.
ALTER TABLE task_log ADD COLUMN notify INTEGER NOT NULL DEFAULT 0;

-- A task's push notification configurations and the state of their
-- delivery. The outbox is the task's log: a configuration delivers the
-- notify entries after sent_seq, up to target_seq, which the store moves
-- to the newest notify entry as entries are appended. due_at is NULL when
-- there is nothing to deliver; a claim moves it to the end of its lease.
-- config is the caller's configuration, opaque JSON.
CREATE TABLE push_configs (
	task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	id         TEXT    NOT NULL,
	config     BLOB,
	created_at INTEGER NOT NULL,
	sent_seq   INTEGER NOT NULL DEFAULT 0,
	target_seq INTEGER NOT NULL DEFAULT 0,
	attempts   INTEGER NOT NULL DEFAULT 0,
	due_at     INTEGER,
	version    INTEGER NOT NULL,
	PRIMARY KEY (task_id, id)
) WITHOUT ROWID;

-- ClaimPushDeliveries: only configurations with something to deliver (or
-- a delivery under way) are in this index, read from the earliest due, so
-- a claim costs O(due deliveries), not O(configurations).
CREATE INDEX push_configs_due ON push_configs (due_at) WHERE due_at IS NOT NULL;
