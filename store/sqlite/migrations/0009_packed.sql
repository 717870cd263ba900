-- 0009: each fact stored once, and packed (store/internal/pack,
-- store/sqlite/packed.go; docs/decisions/0200-each-fact-stored-once.md).
-- The tables are rebuilt and their rows converted here, in this
-- migration's transaction: a file of any earlier version reads back the
-- same afterwards.
--
-- - A task's status is the status of the newest status entry of its log,
--   its question most of that entry again, its artifacts those of its
--   artifact entries: a task's JSON columns are packed against the last
--   two entries of its log, from ref_seq on, so they hold references to
--   their bytes instead of a second copy.
-- - Every JSON value holds its task's ID, its context ID and the UUIDs of
--   its messages and artifacts as tokens of 1 or 17 bytes instead of 36,
--   the phrases of A2A's JSON as a byte or two, its times as about ten
--   bytes. askpoint_pack is pack.Pack, registered with the driver.
-- - A log entry names its task by the task's integer key, not by its
--   36-byte ID: each entry and each key of the log's indexes was the ID
--   again. The IDs rows are looked up by (a message's messageId, a task's
--   request key) are packed too, a UUID in 18 bytes.
-- - History is read from the log's primary key (a task's log is a few
--   entries, most of them history): task_log_history, a second copy of
--   every history entry's key, is gone.
-- - The list index is ascending, read backwards by the same newest-first
--   queries: a new task's key goes to the end of its state's range, where
--   the pages stay full, not to its start, where every split left two
--   half-empty pages (172 bytes a task for 81 bytes of keys).

DROP TRIGGER tasks_counted_insert;
DROP TRIGGER tasks_counted_state;
DROP TRIGGER tasks_counted_delete;

CREATE TABLE tasks_new (
	key         INTEGER NOT NULL PRIMARY KEY,
	id          TEXT    NOT NULL UNIQUE,
	context_id  TEXT    NOT NULL,
	tenant      TEXT    NOT NULL,
	owner       TEXT    NOT NULL,
	agent       TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	last_seq    INTEGER NOT NULL,
	ref_seq     INTEGER,
	status      BLOB,
	artifacts   BLOB,
	metadata    BLOB,
	checkpoint  BLOB,
	question    BLOB,
	input       BLOB,
	pause       BLOB,
	wake_at     INTEGER,
	hold_at     INTEGER,
	runnable    INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	request_key TEXT
);

-- The columns are packed against the last two entries of the log (or
-- its one), as they are before the log is packed.
CREATE TEMP TABLE refs AS
	SELECT t.id AS id, max(1, t.last_seq - 1) AS seq,
		(SELECT body FROM task_log l WHERE l.task_id = t.id AND l.seq = max(1, t.last_seq - 1)) AS body,
		(SELECT body FROM task_log l WHERE l.task_id = t.id AND l.seq = max(1, t.last_seq - 1) + 1) AS body2
	FROM tasks t WHERE t.last_seq > 0;

INSERT INTO tasks_new (key, id, context_id, tenant, owner, agent, state, version, last_seq, ref_seq,
		status, artifacts, metadata, checkpoint, question, input, pause,
		wake_at, hold_at, runnable, lease_owner, lease_until, created_at, updated_at, request_key)
	SELECT t.rowid, t.id, t.context_id, t.tenant, t.owner, t.agent, t.state, t.version, t.last_seq,
		r.seq,
		askpoint_pack(t.status, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.artifacts, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.metadata, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.checkpoint, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.question, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.input, t.id, t.context_id, r.body, r.body2),
		askpoint_pack(t.pause, t.id, t.context_id, r.body, r.body2),
		t.wake_at, t.hold_at, t.runnable, t.lease_owner, t.lease_until, t.created_at, t.updated_at,
		askpoint_pack(t.request_key, '', '', NULL, NULL)
	FROM tasks t LEFT JOIN refs r ON r.id = t.id
	ORDER BY t.rowid;

DROP TABLE refs;

CREATE TABLE task_log_new (
	task_key   INTEGER NOT NULL REFERENCES tasks_new (key) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	message_id TEXT    NOT NULL DEFAULT '',
	in_history INTEGER NOT NULL DEFAULT 0,
	notify     INTEGER NOT NULL DEFAULT 0,
	body       BLOB,
	at         INTEGER NOT NULL,
	PRIMARY KEY (task_key, seq)
) WITHOUT ROWID;

INSERT INTO task_log_new (task_key, seq, kind, message_id, in_history, notify, body, at)
	SELECT t.key, l.seq, l.kind, coalesce(askpoint_pack(l.message_id, '', '', NULL, NULL), ''), l.in_history, l.notify, askpoint_pack(l.body, l.task_id, '', NULL, NULL), l.at
	FROM task_log l JOIN tasks_new t ON t.id = l.task_id;

CREATE TABLE push_configs_new (
	task_id    TEXT    NOT NULL REFERENCES tasks_new (id) ON DELETE CASCADE,
	id         TEXT    NOT NULL,
	config     BLOB,
	created_at INTEGER NOT NULL,
	sent_seq   INTEGER NOT NULL DEFAULT 0,
	target_seq INTEGER NOT NULL DEFAULT 0,
	attempts   INTEGER NOT NULL DEFAULT 0,
	due_at     INTEGER,
	version    INTEGER NOT NULL,
	claimed    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (task_id, id)
) WITHOUT ROWID;

INSERT INTO push_configs_new (task_id, id, config, created_at, sent_seq, target_seq, attempts, due_at, version, claimed)
	SELECT task_id, id, config, created_at, sent_seq, target_seq, attempts, due_at, version, claimed FROM push_configs;

-- The children first: nothing refers to the old tasks when it goes.
DROP TABLE push_configs;
DROP TABLE task_log;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
ALTER TABLE task_log_new RENAME TO task_log;
ALTER TABLE push_configs_new RENAME TO push_configs;

-- The indexes of 0001-0007, tasks_list now ascending, task_log_message by
-- the task's key, task_log_history not at all.
CREATE INDEX tasks_list ON tasks (tenant, owner, agent, state, updated_at, id);
CREATE INDEX tasks_context ON tasks (context_id);
CREATE INDEX tasks_claim ON tasks (lease_until) WHERE runnable = 1;
CREATE INDEX tasks_wake ON tasks (wake_at, id) WHERE wake_at IS NOT NULL;
CREATE INDEX tasks_hold ON tasks (hold_at, id) WHERE hold_at IS NOT NULL;
CREATE UNIQUE INDEX tasks_request ON tasks (request_key) WHERE request_key IS NOT NULL;
CREATE INDEX task_log_message ON task_log (task_key, message_id) WHERE kind = 'message';
CREATE INDEX push_configs_due ON push_configs (due_at) WHERE due_at IS NOT NULL;

-- The triggers of 0008, as they were.
CREATE TRIGGER tasks_counted_insert AFTER INSERT ON tasks BEGIN
	INSERT INTO task_counts (tenant, owner, agent, auth_required, canceled, completed, failed, input_required, rejected, submitted, working)
		VALUES (NEW.tenant, NEW.owner, NEW.agent, NEW.state = 'TASK_STATE_AUTH_REQUIRED', NEW.state = 'TASK_STATE_CANCELED', NEW.state = 'TASK_STATE_COMPLETED', NEW.state = 'TASK_STATE_FAILED', NEW.state = 'TASK_STATE_INPUT_REQUIRED', NEW.state = 'TASK_STATE_REJECTED', NEW.state = 'TASK_STATE_SUBMITTED', NEW.state = 'TASK_STATE_WORKING')
		ON CONFLICT (tenant, owner, agent) DO UPDATE SET
			auth_required = auth_required + excluded.auth_required,
			canceled = canceled + excluded.canceled,
			completed = completed + excluded.completed,
			failed = failed + excluded.failed,
			input_required = input_required + excluded.input_required,
			rejected = rejected + excluded.rejected,
			submitted = submitted + excluded.submitted,
			working = working + excluded.working;
END;

CREATE TRIGGER tasks_counted_state AFTER UPDATE OF state ON tasks WHEN OLD.state IS NOT NEW.state BEGIN
	UPDATE task_counts SET
		auth_required = auth_required + (NEW.state = 'TASK_STATE_AUTH_REQUIRED') - (OLD.state = 'TASK_STATE_AUTH_REQUIRED'),
		canceled = canceled + (NEW.state = 'TASK_STATE_CANCELED') - (OLD.state = 'TASK_STATE_CANCELED'),
		completed = completed + (NEW.state = 'TASK_STATE_COMPLETED') - (OLD.state = 'TASK_STATE_COMPLETED'),
		failed = failed + (NEW.state = 'TASK_STATE_FAILED') - (OLD.state = 'TASK_STATE_FAILED'),
		input_required = input_required + (NEW.state = 'TASK_STATE_INPUT_REQUIRED') - (OLD.state = 'TASK_STATE_INPUT_REQUIRED'),
		rejected = rejected + (NEW.state = 'TASK_STATE_REJECTED') - (OLD.state = 'TASK_STATE_REJECTED'),
		submitted = submitted + (NEW.state = 'TASK_STATE_SUBMITTED') - (OLD.state = 'TASK_STATE_SUBMITTED'),
		working = working + (NEW.state = 'TASK_STATE_WORKING') - (OLD.state = 'TASK_STATE_WORKING')
	WHERE tenant = NEW.tenant AND owner = NEW.owner AND agent = NEW.agent;
END;

CREATE TRIGGER tasks_counted_delete AFTER DELETE ON tasks BEGIN
	UPDATE task_counts SET
		auth_required = auth_required - (OLD.state = 'TASK_STATE_AUTH_REQUIRED'),
		canceled = canceled - (OLD.state = 'TASK_STATE_CANCELED'),
		completed = completed - (OLD.state = 'TASK_STATE_COMPLETED'),
		failed = failed - (OLD.state = 'TASK_STATE_FAILED'),
		input_required = input_required - (OLD.state = 'TASK_STATE_INPUT_REQUIRED'),
		rejected = rejected - (OLD.state = 'TASK_STATE_REJECTED'),
		submitted = submitted - (OLD.state = 'TASK_STATE_SUBMITTED'),
		working = working - (OLD.state = 'TASK_STATE_WORKING')
	WHERE tenant = OLD.tenant AND owner = OLD.owner AND agent = OLD.agent;
END;
