-- 0006_events_body_text.sql - the event body as the exact canonical text
-- that was emitted: /events returns these bytes verbatim (jsonb would
-- reorder keys and rewrite numbers).
--
-- Mirrors schema/tables.igw (events.body_text); applied once, in one
-- transaction, by services.sh migrate.

ALTER TABLE events ADD COLUMN body_text text;
UPDATE events SET body_text = body::text;
ALTER TABLE events ALTER COLUMN body_text SET NOT NULL;
