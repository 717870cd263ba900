-- 0009: task_log no longer has a foreign key on tasks.
--
-- Each log entry inserted ran the key's check, a lookup of its task's row
-- FOR KEY SHARE: seven a round trip of the worked example, about 8% of the
-- backends' CPU (docs/decisions/0210). It checked nothing a write can get
-- wrong: the log is written only by the statement that writes its task's
-- row (CreateTask's and UpdateTask's CTEs append from the row they wrote),
-- and deleted with it by DeleteFinished, in the same statement, instead of
-- by ON DELETE CASCADE. push_configs keeps its key: it is not written on
-- the round trip.
--
-- Dropping a constraint changes no row and is quick. A node of an older
-- version still running after it would leave the log of the tasks it
-- deletes behind (its DeleteFinished counted on the cascade): stop those
-- before starting this one. The name is looked up, not assumed.
DO $$
DECLARE
	fk name;
BEGIN
	FOR fk IN
		SELECT conname FROM pg_constraint
		WHERE conrelid = 'task_log'::regclass AND contype = 'f'
	LOOP
		EXECUTE format('ALTER TABLE task_log DROP CONSTRAINT %I', fk);
	END LOOP;
END
$$;
