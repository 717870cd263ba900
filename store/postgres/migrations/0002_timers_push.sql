-- 0002: timers on tasks, and the push outbox.
--
-- Timer columns are timestamptz holding whole milliseconds like every
-- other time, but NULL (not '-infinity') when unset, so that the partial
-- indexes below hold only the tasks whose timer is set: a paused task
-- without a timer costs them nothing. Every ADD COLUMN here is nullable or
-- has a constant default, so none rewrites its table; the CREATE INDEXes
-- read the tasks table once (writes to it wait for them, in the migration's
-- transaction).

-- The engine's state of a pause (expiry action, reminders sent, holds):
-- opaque json like the other JSON columns, NULL when none.
ALTER TABLE tasks ADD COLUMN pause json;

-- When the engine must look at the task again: the question's expiry or
-- its next reminder (wake_at), the next release of a hold (hold_at).
ALTER TABLE tasks ADD COLUMN wake_at timestamptz;
ALTER TABLE tasks ADD COLUMN hold_at timestamptz;

-- DueTasks and NextDue: only tasks whose timer is set are in these
-- indexes, and they are read in timer order from the earliest, so a sweep
-- costs O(due tasks), not O(paused tasks); id breaks ties so that the
-- order is total without a sort.
CREATE INDEX tasks_wake ON tasks (wake_at, id) WHERE wake_at IS NOT NULL;
CREATE INDEX tasks_hold ON tasks (hold_at, id) WHERE hold_at IS NOT NULL;

-- A log entry with notify set goes to the task's push configurations.
ALTER TABLE task_log ADD COLUMN notify boolean NOT NULL DEFAULT false;

-- A task's push notification configurations and the state of their
-- delivery. The outbox is the task's log: a configuration delivers the
-- notify entries after sent_seq, up to target_seq, which the store moves
-- to the newest notify entry as entries are appended. due_at is NULL when
-- there is nothing to deliver; a claim moves it to the end of its lease.
-- config is the caller's configuration, opaque json.
CREATE TABLE push_configs (
	task_id    text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	id         text COLLATE "C" NOT NULL,
	config     json,
	created_at timestamptz NOT NULL,
	sent_seq   bigint      NOT NULL DEFAULT 0,
	target_seq bigint      NOT NULL DEFAULT 0,
	attempts   integer     NOT NULL DEFAULT 0,
	due_at     timestamptz,
	version    bigint      NOT NULL,
	PRIMARY KEY (task_id, id)
);

-- ClaimPushDeliveries: only configurations with something to deliver (or
-- a delivery under way) are in this index, read from the earliest due, so
-- a claim costs O(due deliveries), not O(configurations).
CREATE INDEX push_configs_due ON push_configs (due_at) WHERE due_at IS NOT NULL;
