-- 0006: ListTasks reads a page, and counts its total, from index ranges.
--
-- Every listing names its agent (each agent's endpoint lists its own
-- tasks), which tasks_list (tenant, owner, updated_at, id) did not hold:
-- a page filtered the rows it read, and the count of a listing read every
-- row of the caller's tasks. With the agent and the state in the index a
-- page by state (the inbox's: input-required) is one range of it, however
-- few tasks are in that state, and counts from it without reading a task;
-- a page of every state merges the first rows of each state's range, and
-- counts from each. One index, not one more beside it: every transition
-- changes a task's time, so every list index is written on each. No table
-- of counts either: keeping one in the statement that creates a task cost
-- 3-4% of the round trip's CPU here (the engine counts a listing once, on
-- its first page). (Building the index holds writes to tasks for as long
-- as it takes: about 3 s per million tasks here.)
DROP INDEX tasks_list;
CREATE INDEX tasks_list ON tasks (tenant, owner, agent, state, updated_at DESC, id DESC);
