-- 0008: task_counts counts each caller's tasks of each agent by state,
-- so that the total of a listing by state is one row too.
--
-- Migration 0007 counted tasks per tenant, owner and agent only: the first
-- page of a listing by a state most tasks are in (completed) counted them
-- from the list index, 126 ms at 1,000,000 tasks. Now one column per
-- state of store.TaskStates (a task in another state is counted in none,
-- as a listing that names no state lists it in none), kept by the
-- triggers below in the writer's transaction: a new task adds one to its
-- state's column, a change of state moves one from the old state's to the
-- new one's (a write that keeps the state writes no count), a delete takes
-- one away. (tenant, owner and agent of a task never change.) The counts
-- are rebuilt from the tasks in this migration's transaction, which holds
-- the file's write lock.
DROP TRIGGER tasks_counted_insert;
DROP TRIGGER tasks_counted_delete;
DROP TABLE task_counts;

CREATE TABLE task_counts (
	tenant TEXT NOT NULL,
	owner  TEXT NOT NULL,
	agent  TEXT NOT NULL,
	auth_required  INTEGER NOT NULL DEFAULT 0,
	canceled       INTEGER NOT NULL DEFAULT 0,
	completed      INTEGER NOT NULL DEFAULT 0,
	failed         INTEGER NOT NULL DEFAULT 0,
	input_required INTEGER NOT NULL DEFAULT 0,
	rejected       INTEGER NOT NULL DEFAULT 0,
	submitted      INTEGER NOT NULL DEFAULT 0,
	working        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, owner, agent)
) WITHOUT ROWID;

INSERT INTO task_counts (tenant, owner, agent, auth_required, canceled, completed, failed, input_required, rejected, submitted, working)
	SELECT tenant, owner, agent,
		sum(state = 'TASK_STATE_AUTH_REQUIRED'),
		sum(state = 'TASK_STATE_CANCELED'),
		sum(state = 'TASK_STATE_COMPLETED'),
		sum(state = 'TASK_STATE_FAILED'),
		sum(state = 'TASK_STATE_INPUT_REQUIRED'),
		sum(state = 'TASK_STATE_REJECTED'),
		sum(state = 'TASK_STATE_SUBMITTED'),
		sum(state = 'TASK_STATE_WORKING')
	FROM tasks GROUP BY tenant, owner, agent;

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
