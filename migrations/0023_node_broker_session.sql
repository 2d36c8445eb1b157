-- 0023_node_broker_session.sql - several nodes (issue 28; docs/decisions.md
-- "Several nodes: a dead node's legs, and what the broker held for it"):
-- a node's broker client id, so that a live node can drain the uplinks the
-- broker queued for it once it lapsed, once per epoch.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw nodes); applied once,
-- in one transaction, by services.sh migrate.

ALTER TABLE nodes ADD COLUMN mqtt_client_id text; -- Its broker client id.
ALTER TABLE nodes ADD COLUMN drained_epoch bigint; -- The epoch whose broker session a live node drained.
