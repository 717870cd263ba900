-- 0001: tasks and their append-only logs.
--
-- Times are timestamptz holding whole milliseconds (the driver truncates),
-- so that a listing cursor carried as unix milliseconds matches exactly.
-- lease_until '-infinity' means unleased (so that a claim is one index
-- range scan, in lease order). JSON columns are json (kept byte for
-- byte, unlike jsonb), NULL when the engine has nothing to keep. IDs use
-- the "C" collation so that they sort byte by byte, as in Go and SQLite.

CREATE TABLE tasks (
	id          text COLLATE "C" NOT NULL PRIMARY KEY,
	context_id  text        NOT NULL,
	tenant      text        NOT NULL,
	owner       text        NOT NULL,
	agent       text        NOT NULL,
	state       text        NOT NULL,
	version     bigint      NOT NULL,
	last_seq    bigint      NOT NULL,
	status      json,
	artifacts   json,
	metadata    json,
	checkpoint  json,
	question    json,
	input       json,
	runnable    boolean     NOT NULL DEFAULT false,
	lease_owner text        NOT NULL DEFAULT '',
	lease_until timestamptz NOT NULL DEFAULT '-infinity',
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL
);

-- ListTasks: a tenant's and owner's tasks, newest first, keyset-paged.
CREATE INDEX tasks_list ON tasks (tenant, owner, updated_at DESC, id DESC);

-- ListTasks filtered by context.
CREATE INDEX tasks_context ON tasks (context_id);

-- ClaimRunnable: only runnable tasks are in this index, so a claim costs
-- O(runnable tasks), not O(tasks); it reads them in lease order (unleased
-- first, then the longest-lapsed), so a claim stops after its limit.
CREATE INDEX tasks_claim ON tasks (lease_until) WHERE runnable;

CREATE TABLE task_log (
	task_id    text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq        bigint      NOT NULL,
	kind       text        NOT NULL,
	message_id text        NOT NULL DEFAULT '',
	in_history boolean     NOT NULL DEFAULT false,
	body       json,
	at         timestamptz NOT NULL,
	PRIMARY KEY (task_id, seq)
);

-- History: a task's history entries without walking its whole log.
CREATE INDEX task_log_history ON task_log (task_id, seq) WHERE in_history;
