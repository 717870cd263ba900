-- 0010: the JSON the store keeps is packed bytea, and task_log_history
-- is gone (docs/decisions/0250).
--
-- Every JSON column of tasks and task_log's body become bytea, packed by
-- the store as the SQLite store packs them (store/internal/pack): a log
-- entry's body against its task's ID; a task's columns against its ID,
-- its context ID and the last two entries (or the one) of the write that
-- set them, from ref_seq on, so that the task's status is a reference to
-- the status entry it came from and most of the question one to the
-- question's entry. PostgreSQL no longer parses the JSON (json_in checked
-- every value written; the engine writes it valid).
--
-- The rows already there keep their JSON byte for byte, as an unpacked
-- value (a value that starts with a byte below 0x20, JSON's whitespace,
-- behind a 0x00), with ref_seq NULL: they read back as they were, and each
-- task's next write packs it. Changing a column's type rewrites the table
-- and its indexes, holding every read and write of it until the
-- migration commits (about 10 s per million tasks here).
--
-- History reads the log backwards by its primary key and skips the
-- entries not in history, as the SQLite store does: a task's log is a few
-- entries, and the index cost every history entry written an index entry.
--
-- A node of an older version writes JSON text into these columns: stop
-- those before starting this one.
CREATE FUNCTION pg_temp.askpoint_stored(v json) RETURNS bytea
	LANGUAGE sql IMMUTABLE STRICT
	AS $$
		SELECT CASE WHEN get_byte(b, 0) < 32 THEN '\x00'::bytea || b ELSE b END
		FROM convert_to(v::text, 'UTF8') AS b
	$$;

DROP INDEX task_log_history;

ALTER TABLE tasks
	ALTER COLUMN status TYPE bytea USING pg_temp.askpoint_stored(status),
	ALTER COLUMN artifacts TYPE bytea USING pg_temp.askpoint_stored(artifacts),
	ALTER COLUMN metadata TYPE bytea USING pg_temp.askpoint_stored(metadata),
	ALTER COLUMN checkpoint TYPE bytea USING pg_temp.askpoint_stored(checkpoint),
	ALTER COLUMN question TYPE bytea USING pg_temp.askpoint_stored(question),
	ALTER COLUMN input TYPE bytea USING pg_temp.askpoint_stored(input),
	ALTER COLUMN pause TYPE bytea USING pg_temp.askpoint_stored(pause),
	ADD COLUMN ref_seq bigint;

ALTER TABLE task_log
	ALTER COLUMN body TYPE bytea USING pg_temp.askpoint_stored(body);
