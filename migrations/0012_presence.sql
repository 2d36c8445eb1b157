-- 0012_presence.sql - device presence from the broker (issue 15, step 3):
-- the MQTT auth plugin publishes online/offline facts of device connections
-- with its boot id and a sequence; igwd stores the newest fact per device
-- (edge/presence.c): `online`, when (`presence_at`) and the fact's ordering
-- key (`presence_boot`, `presence_seq`), so an older fact never overwrites
-- a newer one. The partial index finds the devices of an older broker boot
-- (a broker restart ended their connections).
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: table devices);
-- applied once, in one transaction, by services.sh migrate. `online` has a
-- constant default (no table rewrite in PostgreSQL 11+); the others are
-- nullable without defaults.

ALTER TABLE devices
    ADD COLUMN online        boolean NOT NULL DEFAULT false, -- Connected to the broker, as its newest presence fact says (edge/presence.c).
    ADD COLUMN presence_at   timestamptz, -- When the broker saw that connection or disconnection.
    ADD COLUMN presence_boot bigint, -- The broker process of the newest presence fact (its start, Unix ms).
    ADD COLUMN presence_seq  bigint; -- That fact's sequence in its broker process: an older (boot, seq) changes nothing.

CREATE INDEX devices_presence_boot_idx ON devices (presence_boot) WHERE presence_boot IS NOT NULL;
