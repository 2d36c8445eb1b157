-- 0017_im_group_quotas.sql - the stand-in IM's bound on groups per user
-- (issue 24, item 5; src/igwd/call/standin.c, docs/talk.md): a counter per
-- creator, raised in the statement that creates a group only while under
-- im_max_groups_per_user, so racing creates cannot pass the bound (ON
-- CONFLICT DO UPDATE ... WHERE re-reads the newest row under its lock).
-- The groups made before it are counted.
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: im_group_quotas);
-- applied once, in one transaction, by services.sh migrate.

-- Groups each user created in the stand-in IM: im_max_groups_per_user bounds them (src/igwd/call/standin.c).
CREATE TABLE im_group_quotas (
    user_id bigint NOT NULL CONSTRAINT im_group_quotas_user_id_fkey REFERENCES users (user_id),
    groups  bigint NOT NULL DEFAULT 0, -- Groups this user created.
    CONSTRAINT im_group_quotas_pkey PRIMARY KEY (user_id)
);

INSERT INTO im_group_quotas (user_id, groups)
    SELECT owner_user_id, count(*) FROM im_groups GROUP BY owner_user_id;
