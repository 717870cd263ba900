-- 0007: task_counts counts each caller's finished tasks of each agent by
-- state, so that a listing's total costs a few rows, not a count of its
-- tasks (110 ms from the list index at 1,000,000 tasks before).
--
-- One column per terminal state (store.TerminalStates): the tasks that
-- pile up until retention deletes them. The open ones are counted from
-- their ranges of tasks_list, as before: a round trip moves a task into a
-- terminal state once, so it writes one count; counting the open states
-- too would write one more in every CreateTask and change of state, each
-- about 2% of a round trip's CPU (docs/decisions/0125).
--
-- The writes keep the counts in their own statement, so in their
-- transaction (store/postgres: a CreateTask of a finished task, an
-- UpdateTask into or out of a terminal state, DeleteFinished), adding to
-- the row of their shard, pg_backend_pid() % 64, so that writers on
-- different connections, of any node, seldom wait for each other's commit
-- on one row. Each of those statements adds to one row (DeleteFinished to
-- one per caller and agent, in key order), so that none deadlocks. A total
-- is the sum over the shards; a shard's count alone may be negative.
--
-- The counts are built here from the tasks, under a SHARE lock: the writes
-- wait for the migration's commit (about 0.5 s per million tasks here;
-- reads do not), so that none is missed. A node of an older version still
-- running after it writes tasks without counting them: stop those before
-- starting this one.
LOCK TABLE tasks IN SHARE MODE;

CREATE TABLE task_counts (
	tenant    text    NOT NULL,
	owner     text    NOT NULL,
	agent     text    NOT NULL,
	shard     integer NOT NULL,
	completed bigint  NOT NULL DEFAULT 0,
	failed    bigint  NOT NULL DEFAULT 0,
	canceled  bigint  NOT NULL DEFAULT 0,
	rejected  bigint  NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, owner, agent, shard)
);

INSERT INTO task_counts (tenant, owner, agent, shard, completed, failed, canceled, rejected)
	SELECT tenant, owner, agent, 0,
		count(*) FILTER (WHERE state = 'TASK_STATE_COMPLETED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_FAILED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_CANCELED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_REJECTED')
	FROM tasks
	WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')
	GROUP BY tenant, owner, agent;
