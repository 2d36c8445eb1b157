-- 0013_im_groups.sql - the stand-in IM back end's persistent groups and
-- their members (issue 16; src/igwd/call/standin.c, docs/talk.md). Live
-- calls are Redis state, not tables.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: im_groups,
-- im_group_members); applied once, in one transaction, by services.sh migrate.

CREATE DOMAIN im_groups_name AS text CONSTRAINT im_groups_name_check CHECK (octet_length(VALUE) BETWEEN 1 AND 64);

-- Persistent groups of the stand-in IM back end (src/igwd/call/standin.c); a real IM keeps its own.
CREATE TABLE im_groups (
    group_id      ident          NOT NULL,
    enterprise_id bigint         NOT NULL CONSTRAINT im_groups_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    name          im_groups_name NOT NULL,
    owner_user_id bigint         NOT NULL CONSTRAINT im_groups_owner_user_id_fkey REFERENCES users (user_id),
    created_at    timestamptz    NOT NULL DEFAULT now(),
    CONSTRAINT im_groups_pkey PRIMARY KEY (group_id)
);
CREATE INDEX im_groups_enterprise_id_idx ON im_groups (enterprise_id);

-- Persistent members of a stand-in group.
CREATE TABLE im_group_members (
    group_id text        NOT NULL CONSTRAINT im_group_members_group_id_fkey REFERENCES im_groups (group_id),
    user_id  bigint      NOT NULL CONSTRAINT im_group_members_user_id_fkey REFERENCES users (user_id),
    added_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT im_group_members_pkey PRIMARY KEY (group_id, user_id)
);
CREATE INDEX im_group_members_user_id_idx ON im_group_members (user_id);
