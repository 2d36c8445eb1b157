-- 0011_nodes.sql - nodes and session ownership (issue 15, step 1): each
-- igwd process claims a `nodes` row (its node id, a new epoch) at start and
-- heartbeats it; a session records the node and epoch that own it, so the
-- sessions of a restarted node (older epoch) or of a node whose heartbeat
-- lapsed are ended by a sweep (session/node.c). The partial index holds the
-- live sessions only: the sweeps never walk the ended history.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: table nodes, the new
-- columns of sessions); applied once, in one transaction, by services.sh
-- migrate. The new columns are nullable without defaults: no table rewrite.

CREATE DOMAIN purpose AS text CONSTRAINT purpose_check CHECK (VALUE IN ('ipcLiveView', 'ipcTalk', 'recordPlayback'));

-- igwd processes: a node id and its epoch, raised by each process that starts with that id (session/node.c).
CREATE TABLE nodes (
    node_id      text        NOT NULL, -- Configured, or the host name and the listening port.
    epoch        bigint      NOT NULL, -- 1 at the first start, then one more per start.
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(), -- Raised every node_heartbeat_ms while the epoch is the current one.
    CONSTRAINT nodes_pkey PRIMARY KEY (node_id)
);

ALTER TABLE sessions
    ADD COLUMN purpose     purpose, -- What the session is for (the engine's purpose table).
    ADD COLUMN camera_id   ident,
    ADD COLUMN owner_node  text, -- The node (nodes.node_id) whose process holds the session's live state.
    ADD COLUMN owner_epoch bigint, -- That node's epoch when it took the session: a later epoch of the node may not touch it.
    ADD COLUMN deadline_ms bigint; -- The session's next deadline (Unix ms): invite, establish.

CREATE INDEX sessions_owner_node_owner_epoch_idx ON sessions (owner_node, owner_epoch) WHERE state <> 'ended';
