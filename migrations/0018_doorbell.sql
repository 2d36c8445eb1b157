-- 0018_doorbell.sql - door-bell rings (issue 25; docs/doorbell.md,
-- src/igwd/session/purposes/doorbell.c): the ring's device anchor row,
-- whose state decides the first accept; the sessions' ringing state and
-- the columns of a ringing session (its ring, its invite token); the
-- purpose doorbell.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: rings, sessions;
-- schema/machines.igw: session, ring); applied once, in one transaction,
-- by services.sh migrate.

ALTER DOMAIN session_state DROP CONSTRAINT session_state_check;
ALTER DOMAIN session_state ADD CONSTRAINT session_state_check CHECK (VALUE IN ('ringing', 'invited', 'established', 'ended'));
ALTER DOMAIN purpose DROP CONSTRAINT purpose_check;
ALTER DOMAIN purpose ADD CONSTRAINT purpose_check CHECK (VALUE IN ('ipcLiveView', 'ipcTalk', 'recordPlayback', 'doorbell'));
CREATE DOMAIN ring_state AS text CONSTRAINT ring_state_check CHECK (VALUE IN ('ringing', 'established', 'ended'));
CREATE DOMAIN rings_reason AS text CONSTRAINT rings_reason_check CHECK (octet_length(VALUE) BETWEEN 1 AND 256);

ALTER TABLE sessions ADD COLUMN ring_id ident; -- doorbell: the ring (rings.ring_id) this endpoint's session answers.
ALTER TABLE sessions ADD COLUMN invite_token ident; -- doorbell: the token of its ringing event; its accept or decline must carry it.
CREATE INDEX sessions_ring_id_idx ON sessions (ring_id) WHERE state <> 'ended';

-- Door-bell rings: each one's device anchor session (src/igwd/session/purposes/doorbell.c). The first accept is decided here, by this row, whatever the worker or node.
CREATE TABLE rings (
    ring_id       ident        NOT NULL, -- The anchor's id; also its camera leg's (the invite and the bye name it).
    enterprise_id bigint       NOT NULL, -- The device's enterprise when it rang.
    product_id    ident        NOT NULL,
    device_name   ident        NOT NULL,
    camera_id     ident        NOT NULL,
    msg_token     token        NOT NULL, -- The device's ring (the first; joined rings are its device_messages).
    state         ring_state   NOT NULL,
    reason        rings_reason, -- Why it ended.
    controller    ident, -- The session that controls the call: the accept's winner, then a handover's target.
    owner_node    text         NOT NULL, -- The node that holds the anchor and its camera leg.
    owner_epoch   bigint       NOT NULL, -- That node's epoch when the ring came.
    deadline_ms   bigint, -- ringing: it ends noAnswer at this time (Unix ms).
    endpoints     bigint       NOT NULL DEFAULT 0, -- Endpoints it rang.
    declined      bigint       NOT NULL DEFAULT 0, -- Of those, the ones that declined: all of them ends it (declined).
    created_at    timestamptz  NOT NULL DEFAULT now(),
    answered_at   timestamptz,
    ended_at      timestamptz,
    CONSTRAINT rings_pkey PRIMARY KEY (ring_id)
);
CREATE UNIQUE INDEX rings_product_id_device_name_camera_id_key ON rings (product_id, device_name, camera_id) WHERE state = 'ringing';
CREATE INDEX rings_owner_node_owner_epoch_idx ON rings (owner_node, owner_epoch) WHERE state <> 'ended';
