-- 0004_events_identity.sql - events.event_id is assigned by the database
-- (creation order), as device_messages.message_id is.
--
-- Mirrors schema/tables.igw (event_id bigint default identity); applied
-- once, in one transaction, by services.sh migrate.

ALTER TABLE events ALTER COLUMN event_id ADD GENERATED ALWAYS AS IDENTITY;
