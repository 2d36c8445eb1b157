-- 0019_messages.sql - messageSend (issue 26; docs/messages.md): the files
-- applications upload for it, and its messages (one per deliveryId of a
-- user, carried by a device command).
--
-- Mirrors generated/sql/schema.sql (schema/tables.igw: app_files,
-- messages); applied once, in one transaction, by services.sh migrate.

CREATE DOMAIN audio_type AS text CONSTRAINT audio_type_check CHECK (VALUE IN ('audio/ogg', 'audio/wav', 'audio/mpeg'));

-- Files applications uploaded (POST /api/v1/im/interaction/uploads): messageSend's contentRef. Only the uploader may send one (docs/messages.md).
CREATE TABLE app_files (
    file_id       ident       NOT NULL, -- Random; the file is stored at app/<its first two characters>/<it>.
    enterprise_id bigint      NOT NULL CONSTRAINT app_files_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    user_id       bigint      NOT NULL CONSTRAINT app_files_user_id_fkey REFERENCES users (user_id),
    content_type  audio_type  NOT NULL,
    size_bytes    bigint      NOT NULL,
    sha256        bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT app_files_pkey PRIMARY KEY (file_id)
);
CREATE INDEX app_files_enterprise_id_user_id_idx ON app_files (enterprise_id, user_id);

-- messageSend's messages (docs/messages.md): one per deliveryId of a user, carried by its device command (device_commands: the same device token), which settles it.
CREATE TABLE messages (
    enterprise_id bigint      NOT NULL,
    user_id       bigint      NOT NULL,
    delivery_id   ident       NOT NULL,
    product_id    ident       NOT NULL,
    device_name   ident       NOT NULL,
    device_token  token       NOT NULL, -- The play downlink's token (device_commands.device_token).
    file_id       ident       NOT NULL,
    expires_at_ms time_ms     NOT NULL,
    downlink      jsonb       NOT NULL, -- The play downlink, as published: what the device's `media message get` returns while the message waits.
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT messages_pkey PRIMARY KEY (enterprise_id, user_id, delivery_id),
    CONSTRAINT messages_product_id_device_name_device_token_key UNIQUE (product_id, device_name, device_token)
);
