-- 0009: each fact stored once, and packed (store/internal/pack,
-- store/sqlite/packed.go; docs/decisions/0200-a-task-in-a-kilobyte.md).
--
-- A task's status is the status of the newest status entry of its log, and
-- its question most of that entry again: the JSON columns of a task are
-- now packed against that entry, ref_seq, so that they hold references to
-- its bytes instead of a second copy. Every JSON value (a log entry's
-- body, a task's column) holds its task's ID, its context ID and the IDs
-- of its messages and artifacts as tokens of 1 or 17 bytes instead of 36,
-- the phrases of A2A's JSON as a byte or two, and its times as about 10
-- bytes. askpoint_pack is pack.Pack, registered with the driver; values
-- that cannot be packed are kept as they are, and a value written before
-- this migration reads back as it is, so the rows are converted here, in
-- this migration's transaction, and nothing else changes.
ALTER TABLE tasks ADD COLUMN ref_seq INTEGER;

UPDATE tasks SET ref_seq = coalesce(
	(SELECT max(seq) FROM task_log l WHERE l.task_id = tasks.id AND l.kind = 'status'),
	(SELECT max(seq) FROM task_log l WHERE l.task_id = tasks.id));

-- The columns first, against the entry still unpacked; then the log.
UPDATE tasks SET
	status     = askpoint_pack(status, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	artifacts  = askpoint_pack(artifacts, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	metadata   = askpoint_pack(metadata, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	checkpoint = askpoint_pack(checkpoint, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	question   = askpoint_pack(question, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	input      = askpoint_pack(input, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq)),
	pause      = askpoint_pack(pause, id, context_id, (SELECT body FROM task_log l WHERE l.task_id = tasks.id AND l.seq = tasks.ref_seq));

UPDATE task_log SET body = askpoint_pack(body, task_id, '', NULL) WHERE body IS NOT NULL;

-- History is read from the log's primary key (a task's log is a few
-- entries, most of them history): this index was a second copy of every
-- history entry's key that no query needs.
DROP INDEX task_log_history;

-- The list index ascending, read backwards by the same newest-first
-- queries: a new task's key goes to the end of its state's range, where
-- a page filled before stays full, instead of to its start, where every
-- page split left two half-empty pages (the index took 172 bytes a task
-- for 81 bytes of keys).
DROP INDEX tasks_list;
CREATE INDEX tasks_list ON tasks (tenant, owner, agent, state, updated_at, id);
