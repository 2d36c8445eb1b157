-- 0007_backlogs.sql - statements that walked the history now touch only
-- the live rows (issue 4, section 8):
--  * device_commands: the deadline index holds only the commands still
--    waiting for a reply; the overdue pass (every 100 ms) scanned every
--    settled command through the full index.
--  * deliveries: /events reads the unacknowledged deliveries of an endpoint
--    through an index of those alone (every pull skipped the acknowledged
--    ones before them); endpoint_id alone keeps replay's lookup.
--  * endpoints.acked: /events/ack's count is a counter instead of a count
--    of the endpoint's acknowledged deliveries on every ack.
--
-- Mirrors schema/tables.igw; applied once, in one transaction, by
-- services.sh migrate.

DROP INDEX device_commands_deadline_ms_idx;
CREATE INDEX device_commands_deadline_ms_idx ON device_commands (deadline_ms) WHERE outcome IS NULL;

DROP INDEX deliveries_endpoint_id_session_id_watermark_delivery_id_idx;
CREATE INDEX deliveries_endpoint_id_session_id_watermark_delivery_id_idx
    ON deliveries (endpoint_id, session_id, watermark, delivery_id) WHERE acked_at IS NULL;
CREATE INDEX deliveries_endpoint_id_idx ON deliveries (endpoint_id);

ALTER TABLE endpoints ADD COLUMN acked bigint NOT NULL DEFAULT 0;
UPDATE endpoints p SET acked = (SELECT count(*) FROM deliveries d
                                WHERE d.endpoint_id = p.endpoint_id AND d.acked_at IS NOT NULL);
