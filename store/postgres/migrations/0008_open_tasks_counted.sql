-- 0008: task_counts counts each caller's open tasks of each agent too, in
-- one column for every open state (those of store.TaskStates outside
-- 0007's terminal ones), so that a listing by the open state most of its
-- tasks are in takes its total as that count less the other open states'
-- tasks, counted from their ranges of tasks_list, instead of counting its
-- own range (110 ms at 1,000,000 input-required tasks before), and a
-- listing of every state reads no range at all (docs/decisions/0160).
--
-- A task enters the open states as it is created and leaves them as it
-- finishes: a CreateTask in an open state adds one to open_tasks, in its
-- statement, and the UpdateTask that finishes a task takes one from it in
-- the statement that adds one to the finished state's count (one row of
-- one shard, as 0007's writes), so a change between open states (a pause,
-- a resume) writes no count.
--
-- The counts are built here from the tasks, under a SHARE lock, as 0007's
-- were: writes wait for the migration's commit, reads do not. A node of an
-- older version still running after it writes tasks without counting them
-- here: stop those before starting this one.
LOCK TABLE tasks IN SHARE MODE;

ALTER TABLE task_counts ADD COLUMN open_tasks bigint NOT NULL DEFAULT 0;

INSERT INTO task_counts AS k (tenant, owner, agent, shard, open_tasks)
	SELECT tenant, owner, agent, 0, count(*)
	FROM tasks
	WHERE state IN ('TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')
	GROUP BY tenant, owner, agent
	ON CONFLICT (tenant, owner, agent, shard) DO UPDATE SET open_tasks = k.open_tasks + excluded.open_tasks;
