-- A follow-up's deduplication asks one narrow question: does this task's log
-- hold a message with this messageId? This index answers it without reading
-- the task's history, however long it is.
CREATE INDEX task_log_message ON task_log (task_id, message_id) WHERE kind = 'message';
