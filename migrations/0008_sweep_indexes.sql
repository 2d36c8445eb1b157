-- 0008_sweep_indexes.sql - the sweeper reads indexes instead of scanning
-- the tables' history every minute: deliveries and endpoints by expiry
-- (the commands and device commands of a swept endpoint go by their keys'
-- (enterprise, endpoint) prefix, see outbox.c st_sweep).
--
-- Mirrors schema/tables.igw; applied once, in one transaction, by
-- services.sh migrate.

CREATE INDEX endpoints_expires_at_ms_idx ON endpoints (expires_at_ms);
CREATE INDEX deliveries_expires_at_ms_idx ON deliveries (expires_at_ms);
