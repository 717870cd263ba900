-- 0001: tasks and their append-only logs.
--
-- Times are unix milliseconds; lease_until 0 means unleased. JSON columns
-- are opaque BLOBs, NULL when the engine has nothing to keep.

CREATE TABLE tasks (
	id          TEXT    NOT NULL PRIMARY KEY,
	context_id  TEXT    NOT NULL,
	tenant      TEXT    NOT NULL,
	owner       TEXT    NOT NULL,
	agent       TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	last_seq    INTEGER NOT NULL,
	status      BLOB,
	artifacts   BLOB,
	metadata    BLOB,
	checkpoint  BLOB,
	question    BLOB,
	input       BLOB,
	runnable    INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);

-- ListTasks: a tenant's and owner's tasks, newest first, keyset-paged.
CREATE INDEX tasks_list ON tasks (tenant, owner, updated_at DESC, id DESC);

-- ListTasks filtered by context.
CREATE INDEX tasks_context ON tasks (context_id);

-- ClaimRunnable: only runnable tasks are in this index, so a claim costs
-- O(runnable tasks), not O(tasks).
CREATE INDEX tasks_claim ON tasks (lease_until) WHERE runnable = 1;

CREATE TABLE task_log (
	task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	message_id TEXT    NOT NULL DEFAULT '',
	in_history INTEGER NOT NULL DEFAULT 0,
	body       BLOB,
	at         INTEGER NOT NULL,
	PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

-- History: a task's history entries without walking its whole log.
CREATE INDEX task_log_history ON task_log (task_id, seq) WHERE in_history = 1;
