-- 0022_legs.sql - several nodes (issue 28; docs/decisions.md "Several
-- nodes"): camera legs and their holder node, and the forwards inbox
-- widened to a camera's messages on a leg another node holds and their
-- answers.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw forwards, legs);
-- applied once, in one transaction, by services.sh migrate.

ALTER TABLE forwards ALTER COLUMN enterprise_id DROP NOT NULL;
ALTER TABLE forwards ALTER COLUMN endpoint_id DROP NOT NULL;
ALTER TABLE forwards ALTER COLUMN msg_token DROP NOT NULL;
ALTER TABLE forwards ALTER COLUMN session_id DROP NOT NULL;
ALTER TABLE forwards ADD COLUMN kind text NOT NULL DEFAULT 'command'; -- command, uplink or answer.
ALTER TABLE forwards ADD COLUMN origin_node text;   -- uplink: the node that received it and waits for the answer.
ALTER TABLE forwards ADD COLUMN origin_epoch bigint;
ALTER TABLE forwards ADD COLUMN product_id ident;   -- uplink: the camera.
ALTER TABLE forwards ADD COLUMN device_name ident;
ALTER TABLE forwards ADD COLUMN body text;          -- uplink: the device's message; answer: the reply's data.
ALTER TABLE forwards ADD COLUMN reply_to bigint;    -- answer: the uplink's forward_id.
ALTER TABLE forwards ADD COLUMN code bigint;        -- answer: the reply's error class (igw_err).
ALTER TABLE forwards ADD COLUMN reason text;        -- answer: the reply's reason.

CREATE TABLE legs (
    leg_id      ident       NOT NULL, -- The leg's id: the invite's and the camera's messages' sessionId.
    product_id  ident       NOT NULL,
    device_name ident       NOT NULL,
    camera_id   ident       NOT NULL,
    shared      boolean     NOT NULL, -- Shared by every viewer of the camera (a purpose with `leg shared`).
    owner_node  text        NOT NULL, -- The node (nodes.node_id) holding it.
    owner_epoch bigint      NOT NULL, -- That node's epoch.
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT legs_pkey PRIMARY KEY (leg_id)
);
CREATE INDEX legs_product_id_device_name_camera_id_idx ON legs (product_id, device_name, camera_id);
CREATE INDEX legs_owner_node_owner_epoch_idx ON legs (owner_node, owner_epoch);
