-- 0007: ListTasks reads a page from index ranges and its total from a
-- table of counts.
--
-- Every listing names its agent (each agent's endpoint lists its own
-- tasks), which tasks_list (tenant, owner, updated_at, id) did not hold:
-- a page filtered the rows it read, and the count of a listing read every
-- row of the caller's tasks. With the agent and the state in the index a
-- page by state (the inbox's: input-required) is one range of it, however
-- few tasks are in that state, and counts from it without reading a task;
-- a page of every state merges the first rows of each state's range. One
-- index, not one more beside it: every transition changes a task's time,
-- so every list index is written on each.
DROP INDEX tasks_list;
CREATE INDEX tasks_list ON tasks (tenant, owner, agent, state, updated_at DESC, id DESC);

-- How many tasks each caller has of each agent, kept by the triggers below
-- in the transaction that creates or deletes them (tenant, owner and
-- agent of a task never change), so that the total of a listing without a
-- filter costs one row however many tasks there are. A change of state
-- changes no count: counting by state too would cost every transition two
-- more writes.
CREATE TABLE task_counts (
	tenant TEXT    NOT NULL,
	owner  TEXT    NOT NULL,
	agent  TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (tenant, owner, agent)
) WITHOUT ROWID;

INSERT INTO task_counts (tenant, owner, agent, n)
	SELECT tenant, owner, agent, count(*) FROM tasks GROUP BY tenant, owner, agent;

CREATE TRIGGER tasks_counted_insert AFTER INSERT ON tasks BEGIN
	INSERT INTO task_counts (tenant, owner, agent, n) VALUES (NEW.tenant, NEW.owner, NEW.agent, 1)
		ON CONFLICT (tenant, owner, agent) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_counted_delete AFTER DELETE ON tasks BEGIN
	UPDATE task_counts SET n = n - 1 WHERE tenant = OLD.tenant AND owner = OLD.owner AND agent = OLD.agent;
END;
