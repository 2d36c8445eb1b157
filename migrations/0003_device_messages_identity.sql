-- 0003_device_messages_identity.sql - device_messages.message_id is assigned
-- by the database (arrival order), so several igwd processes never collide.
--
-- Mirrors schema/tables.igw (message_id bigint default identity); applied
-- once, in one transaction, by services.sh migrate.

ALTER TABLE device_messages ALTER COLUMN message_id ADD GENERATED ALWAYS AS IDENTITY;
