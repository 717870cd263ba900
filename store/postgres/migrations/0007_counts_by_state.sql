-- 0007: task_counts counts each caller's tasks of each agent by state, so
-- that the total of a listing costs a few rows, not a count of its tasks
-- (110 ms from the list index at 1,000,000 tasks before).
--
-- One column per state of store.TaskStates (a task in another state is
-- counted in none, as a listing that names no state lists it in none).
-- The writes keep it in their own statement, so in their transaction
-- (store/postgres: CreateTask, UpdateTask when the state changes,
-- DeleteFinished), adding to the row of their shard: pg_backend_pid() % 64,
-- so that writers on different connections, of any node, seldom wait for
-- each other's commit on one row, and each statement writes one row
-- (DeleteFinished one per caller and agent, in key order), so that they
-- cannot deadlock. A total is the sum over the shards; a shard's count
-- alone means nothing and may be negative.
--
-- The counts are built from the tasks here, under a SHARE lock on tasks:
-- writes wait for the migration's commit (reads do not), so none is
-- missed. A node of an older version that keeps running after it writes
-- tasks without counting them: stop those before starting this one.
LOCK TABLE tasks IN SHARE MODE;

CREATE TABLE task_counts (
	tenant text    NOT NULL,
	owner  text    NOT NULL,
	agent  text    NOT NULL,
	shard  integer NOT NULL,
	auth_required  bigint  NOT NULL DEFAULT 0,
	canceled       bigint  NOT NULL DEFAULT 0,
	completed      bigint  NOT NULL DEFAULT 0,
	failed         bigint  NOT NULL DEFAULT 0,
	input_required bigint  NOT NULL DEFAULT 0,
	rejected       bigint  NOT NULL DEFAULT 0,
	submitted      bigint  NOT NULL DEFAULT 0,
	working        bigint  NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, owner, agent, shard)
);

INSERT INTO task_counts (tenant, owner, agent, shard, auth_required, canceled, completed, failed, input_required, rejected, submitted, working)
	SELECT tenant, owner, agent, 0,
		count(*) FILTER (WHERE state = 'TASK_STATE_AUTH_REQUIRED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_CANCELED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_COMPLETED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_FAILED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_INPUT_REQUIRED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_REJECTED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_SUBMITTED'),
		count(*) FILTER (WHERE state = 'TASK_STATE_WORKING')
	FROM tasks GROUP BY tenant, owner, agent;
