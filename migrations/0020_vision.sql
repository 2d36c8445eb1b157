-- 0020_vision.sql - AI sessions (issue 27; docs/ai.md): the purpose
-- aiVision and the vision source row each such session's owner keeps,
-- which a vision consent's creation locks.
--
-- Mirrors generated/sql/schema.sql (schema/commands.igw Purpose,
-- schema/tables.igw vision_sources); applied once, in one transaction, by
-- services.sh migrate.

ALTER DOMAIN purpose DROP CONSTRAINT purpose_check;
ALTER DOMAIN purpose ADD CONSTRAINT purpose_check CHECK (VALUE IN ('ipcLiveView', 'ipcTalk', 'recordPlayback', 'doorbell', 'aiVision'));

-- The vision source of a live aiVision session (docs/ai.md): what its consents are signed against. Written by the session's owner; locked by each consent's creation.
CREATE TABLE vision_sources (
    session_id          ident       NOT NULL,
    enterprise_id       bigint      NOT NULL,
    user_id             bigint      NOT NULL,
    owner_node          text        NOT NULL, -- The node (nodes.node_id) holding the session.
    owner_epoch         bigint      NOT NULL, -- That node's epoch when it took the session.
    connection_epoch    bigint      NOT NULL, -- The application's peer connection: one more at each new DTLS association of the session.
    model_resource      text        NOT NULL, -- The assistant serving the session (its processor instance).
    deadline_ms         bigint      NOT NULL, -- The session's deadline (Unix ms): no consent outlives it.
    camera_id           ident       NOT NULL,
    track_id            ident       NOT NULL,
    capability_revision bigint      NOT NULL, -- The camera's capability report the track was selected from (its device_messages id).
    media_revision      revision    NOT NULL,
    live                boolean     NOT NULL, -- False once the session ended: no consent is signed against it.
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT vision_sources_pkey PRIMARY KEY (session_id)
);
