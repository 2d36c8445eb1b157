-- 0016_rights_notify.sql - what changes who may use a device sends NOTIFY
-- igw_rights at commit (issue 24, item 1): an enterprise or a user
-- deactivated, a user moved, a device given to another owner or enterprise
-- or deleted, a grant deleted. Each node's session engine listens and ends
-- at once every session whose holder lost the device (session/rights.c,
-- reason rightsRevoked); a periodic recheck is the safety net for a
-- notification missed while its connection was down.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw, the `notify
-- igw_rights` clauses); applied once, in one transaction, by services.sh
-- migrate. No table is rewritten; each CREATE TRIGGER takes its table's
-- lock briefly.

-- Every session whose holder may lose the device ends (session/rights.c): an enterprise deactivated.
-- NOTIFY igw_rights with the primary key of each row inserted, deleted or updated in (active) or its key.
CREATE FUNCTION enterprises_notify_igw_rights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('igw_rights', OLD.enterprise_id::text);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('igw_rights', NEW.enterprise_id::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER enterprises_notify_igw_rights AFTER INSERT OR DELETE OR UPDATE OF active, enterprise_id ON enterprises
    FOR EACH ROW EXECUTE FUNCTION enterprises_notify_igw_rights();
-- Every session whose holder may lose the device ends (session/rights.c): a user deactivated or moved.
-- NOTIFY igw_rights with the primary key of each row inserted, deleted or updated in (active, enterprise_id) or its key.
CREATE FUNCTION users_notify_igw_rights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('igw_rights', OLD.user_id::text);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('igw_rights', NEW.user_id::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER users_notify_igw_rights AFTER INSERT OR DELETE OR UPDATE OF active, enterprise_id, user_id ON users
    FOR EACH ROW EXECUTE FUNCTION users_notify_igw_rights();
-- Every session whose holder may lose the device ends (session/rights.c): a device given to another owner or enterprise, or deleted.
-- NOTIFY igw_rights with the primary key of each row inserted, deleted or updated in (owner_user_id, enterprise_id) or its key.
CREATE FUNCTION devices_notify_igw_rights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('igw_rights', OLD.product_id || '&' || OLD.device_name);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('igw_rights', NEW.product_id || '&' || NEW.device_name);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER devices_notify_igw_rights AFTER INSERT OR DELETE OR UPDATE OF owner_user_id, enterprise_id, product_id, device_name ON devices
    FOR EACH ROW EXECUTE FUNCTION devices_notify_igw_rights();
-- Every session whose holder may lose the device ends (session/rights.c): a grant deleted.
-- NOTIFY igw_rights with the primary key of each row inserted, deleted or updated in (user_id) or its key.
CREATE FUNCTION device_grants_notify_igw_rights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('igw_rights', OLD.product_id || '&' || OLD.device_name || '&' || OLD.user_id::text);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('igw_rights', NEW.product_id || '&' || NEW.device_name || '&' || NEW.user_id::text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER device_grants_notify_igw_rights AFTER INSERT OR DELETE OR UPDATE OF user_id, product_id, device_name ON device_grants
    FOR EACH ROW EXECUTE FUNCTION device_grants_notify_igw_rights();
