-- 0021_forwards.sql - several nodes (issue 28; docs/decisions.md "Several
-- nodes: the channel to the owner"): the owner node's inbox of session
-- commands accepted on another node.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw forwards); applied
-- once, in one transaction, by services.sh migrate.

CREATE TABLE forwards (
    forward_id    bigint      NOT NULL GENERATED ALWAYS AS IDENTITY, -- Arrival order.
    owner_node    text        NOT NULL, -- The node (nodes.node_id) holding the session.
    owner_epoch   bigint      NOT NULL, -- That node's epoch: no other epoch claims it.
    enterprise_id bigint      NOT NULL,
    endpoint_id   ident       NOT NULL,
    msg_token     token       NOT NULL,
    session_id    ident       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT forwards_pkey PRIMARY KEY (forward_id)
);
CREATE INDEX forwards_owner_node_owner_epoch_forward_id_idx ON forwards (owner_node, owner_epoch, forward_id);
