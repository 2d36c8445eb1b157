-- 0010_device_secret_notify.sql - every change of a device's secret (and
-- every insert, delete or rename of a device) sends NOTIFY
-- igw_device_secret '<productID>&<deviceName>' at commit, so the MQTT auth
-- plugin drops its cached secret at once instead of honouring the old one
-- until its TTL runs out (issue 14, section 5). UPDATEs of other columns
-- (properties, ...) do not fire it.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw, `notify` in table
-- devices; codegen/emit_sql.c); applied once, in one transaction, by
-- services.sh migrate. No table is rewritten and no lock is held beyond
-- the CREATE TRIGGER's brief one on devices.

-- The MQTT auth plugin drops its cached secret of the device (src/mqttauth).
-- NOTIFY igw_device_secret with the primary key of each row inserted, deleted or updated in (secret) or its key.
CREATE FUNCTION devices_notify_igw_device_secret() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('igw_device_secret', OLD.product_id || '&' || OLD.device_name);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('igw_device_secret', NEW.product_id || '&' || NEW.device_name);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER devices_notify_igw_device_secret AFTER INSERT OR DELETE OR UPDATE OF secret, product_id, device_name ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_notify_igw_device_secret();
