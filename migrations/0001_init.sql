-- 0001_init.sql - the initial PostgreSQL schema of igw.
--
-- Migrations are hand-written and append-only: each file is applied once,
-- in name order, in a single transaction (so no BEGIN/COMMIT here), and is
-- never edited after it has been applied anywhere. A schema change adds
-- migrations/NNNN_<what>.sql. tests/sql/drift.sh (make test-sql) fails when
-- migrations/*.sql and generated/sql/schema.sql (generated from
-- schema/tables.igw) build different catalogs.
--
-- This first migration was written by copying generated/sql/schema.sql.

--
-- PostgreSQL 15 DDL of every table of the schema, in declaration order.
-- migrations/ must build the same catalog: tests/sql/drift.sh compares them.

-- Tenants.
CREATE TABLE enterprises (
    enterprise_id bigint      NOT NULL,
    name          text        NOT NULL,
    active        boolean     NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT enterprises_pkey PRIMARY KEY (enterprise_id)
);

-- Users of an enterprise; id is the canonical positive integer.
CREATE TABLE users (
    user_id       bigint      NOT NULL,
    enterprise_id bigint      NOT NULL CONSTRAINT users_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    name          text        NOT NULL,
    active        boolean     NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_pkey PRIMARY KEY (user_id)
);
CREATE INDEX users_enterprise_id_idx ON users (enterprise_id);

-- Products and their thing models.
CREATE TABLE products (
    product_id    text        NOT NULL,
    enterprise_id bigint      NOT NULL CONSTRAINT products_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    name          text        NOT NULL,
    model         jsonb       NOT NULL, -- Thing model: properties, events, actions.
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT products_pkey PRIMARY KEY (product_id),
    CONSTRAINT products_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX products_enterprise_id_idx ON products (enterprise_id);

-- Devices; the secret is base64 of 20 random bytes.
CREATE TABLE devices (
    product_id          text        NOT NULL CONSTRAINT devices_product_id_fkey REFERENCES products (product_id),
    device_name         text        NOT NULL,
    enterprise_id       bigint      NOT NULL CONSTRAINT devices_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    owner_user_id       bigint      CONSTRAINT devices_owner_user_id_fkey REFERENCES users (user_id),
    secret              text        NOT NULL,
    is_gateway          boolean     NOT NULL DEFAULT false,
    gateway_product_id  text,
    gateway_device_name text,
    properties          jsonb       NOT NULL DEFAULT '{}'::jsonb, -- Last reported property values.
    created_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT devices_pkey PRIMARY KEY (product_id, device_name),
    CONSTRAINT devices_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT devices_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT devices_gateway_product_id_check CHECK (
        octet_length(gateway_product_id) BETWEEN 1 AND 64
        AND gateway_product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND gateway_product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT devices_gateway_device_name_check CHECK (
        octet_length(gateway_device_name) BETWEEN 1 AND 64
        AND gateway_device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND gateway_device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX devices_gateway_product_id_gateway_device_name_idx ON devices (gateway_product_id, gateway_device_name);
CREATE INDEX devices_owner_user_id_idx ON devices (owner_user_id);
CREATE INDEX devices_enterprise_id_idx ON devices (enterprise_id);

-- Users granted rights on a device they do not own.
CREATE TABLE device_grants (
    product_id  text        NOT NULL,
    device_name text        NOT NULL,
    user_id     bigint      NOT NULL CONSTRAINT device_grants_user_id_fkey REFERENCES users (user_id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT device_grants_pkey PRIMARY KEY (product_id, device_name, user_id),
    CONSTRAINT device_grants_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_grants_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX device_grants_user_id_idx ON device_grants (user_id);

-- Uplinks from devices, durable before the reply.
CREATE TABLE device_messages (
    message_id  bigint      NOT NULL,
    product_id  text        NOT NULL,
    device_name text        NOT NULL,
    handle      text        NOT NULL,
    msg_type    text        NOT NULL,
    method      text        NOT NULL,
    msg_token   text        NOT NULL,
    body        jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT device_messages_pkey PRIMARY KEY (message_id),
    CONSTRAINT device_messages_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_messages_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_messages_handle_check CHECK (
        octet_length(handle) BETWEEN 1 AND 16
        AND handle !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND handle !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_messages_msg_type_check CHECK (
        octet_length(msg_type) BETWEEN 1 AND 32
        AND msg_type !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND msg_type !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_messages_method_check CHECK (
        octet_length(method) BETWEEN 1 AND 64
        AND method !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND method !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT device_messages_msg_token_check CHECK (
        octet_length(msg_token) BETWEEN 1 AND 128
        AND msg_token !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND msg_token !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX device_messages_product_id_device_name_received_at_idx ON device_messages (product_id, device_name, received_at);

-- Metadata of uploaded files.
CREATE TABLE files (
    file_path   text        NOT NULL,
    product_id  text        NOT NULL,
    device_name text        NOT NULL,
    size_bytes  bigint      NOT NULL,
    sha256      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT files_pkey PRIMARY KEY (file_path),
    CONSTRAINT files_file_path_check CHECK (octet_length(file_path) BETWEEN 1 AND 512),
    CONSTRAINT files_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT files_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);

-- Application endpoints, one hour each.
CREATE TABLE endpoints (
    endpoint_id   text        NOT NULL,
    enterprise_id bigint      NOT NULL CONSTRAINT endpoints_enterprise_id_fkey REFERENCES enterprises (enterprise_id),
    user_id       bigint      NOT NULL CONSTRAINT endpoints_user_id_fkey REFERENCES users (user_id),
    expires_at_ms bigint      NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT endpoints_pkey PRIMARY KEY (endpoint_id),
    CONSTRAINT endpoints_endpoint_id_check CHECK (
        octet_length(endpoint_id) BETWEEN 1 AND 64
        AND endpoint_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND endpoint_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT endpoints_expires_at_ms_check CHECK (expires_at_ms BETWEEN 0 AND 9007199254740991)
);
CREATE INDEX endpoints_enterprise_id_user_id_idx ON endpoints (enterprise_id, user_id);

-- Command acceptances: idempotency by (enterprise, endpoint, msgToken).
CREATE TABLE commands (
    enterprise_id bigint      NOT NULL,
    endpoint_id   text        NOT NULL,
    msg_token     text        NOT NULL,
    user_id       bigint      NOT NULL,
    method        text        NOT NULL,
    session_id    text,
    fingerprint   bytea       NOT NULL, -- SHA-256 of the canonical command.
    command       jsonb       NOT NULL,
    accepted_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT commands_pkey PRIMARY KEY (enterprise_id, endpoint_id, msg_token),
    CONSTRAINT commands_endpoint_id_check CHECK (
        octet_length(endpoint_id) BETWEEN 1 AND 64
        AND endpoint_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND endpoint_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT commands_msg_token_check CHECK (
        octet_length(msg_token) BETWEEN 1 AND 128
        AND msg_token !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND msg_token !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT commands_method_check CHECK (
        method IN ('interaction.open', 'interaction.end', 'interaction.join', 'interaction.leave',
            'interaction.subscribe', 'interaction.mediaOffer', 'interaction.mediaState',
            'interaction.trackControl', 'interaction.configure',
            'interaction.processorControl', 'interaction.control', 'messageSend',
            'device.action', 'device.propertyControl')
    ),
    CONSTRAINT commands_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 64
        AND session_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND session_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);

-- Application sessions.
CREATE TABLE sessions (
    session_id     text        NOT NULL,
    enterprise_id  bigint      NOT NULL,
    user_id        bigint      NOT NULL,
    endpoint_id    text        NOT NULL,
    state          text        NOT NULL,
    reason         text,
    event_seq      bigint      NOT NULL DEFAULT 0,
    media_revision bigint      NOT NULL DEFAULT 1,
    product_id     text,
    device_name    text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sessions_pkey PRIMARY KEY (session_id),
    CONSTRAINT sessions_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 64
        AND session_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND session_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT sessions_endpoint_id_check CHECK (
        octet_length(endpoint_id) BETWEEN 1 AND 64
        AND endpoint_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND endpoint_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT sessions_state_check CHECK (state IN ('invited', 'established', 'ended')),
    CONSTRAINT sessions_reason_check CHECK (octet_length(reason) BETWEEN 1 AND 256),
    CONSTRAINT sessions_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT sessions_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX sessions_endpoint_id_idx ON sessions (endpoint_id);

-- Event bodies, stored once.
CREATE TABLE events (
    event_id   bigint      NOT NULL,
    session_id text,
    msg_token  text        NOT NULL,
    event_seq  bigint,
    body       jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_pkey PRIMARY KEY (event_id),
    CONSTRAINT events_session_id_check CHECK (
        octet_length(session_id) BETWEEN 1 AND 64
        AND session_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND session_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT events_msg_token_check CHECK (
        octet_length(msg_token) BETWEEN 1 AND 128
        AND msg_token !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND msg_token !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT events_event_seq_check CHECK (event_seq BETWEEN 1 AND 9007199254740991)
);

-- Deliveries of events to endpoints; a replay after ack adds a new delivery for the same pair.
CREATE TABLE deliveries (
    delivery_id   text        NOT NULL,
    event_id      bigint      NOT NULL CONSTRAINT deliveries_event_id_fkey REFERENCES events (event_id),
    endpoint_id   text        NOT NULL,
    session_id    text        NOT NULL DEFAULT '', -- Ordering key; '' for session-less events.
    watermark     bigint      NOT NULL,
    state         text        NOT NULL,
    expires_at_ms bigint      NOT NULL,
    acked_at      timestamptz,
    replaces      text,
    CONSTRAINT deliveries_pkey PRIMARY KEY (delivery_id),
    CONSTRAINT deliveries_delivery_id_check CHECK (
        octet_length(delivery_id) BETWEEN 1 AND 64
        AND delivery_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND delivery_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT deliveries_endpoint_id_check CHECK (
        octet_length(endpoint_id) BETWEEN 1 AND 64
        AND endpoint_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND endpoint_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'acknowledged', 'redelivered', 'expired')),
    CONSTRAINT deliveries_expires_at_ms_check CHECK (expires_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT deliveries_replaces_check CHECK (
        octet_length(replaces) BETWEEN 1 AND 64
        AND replaces !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND replaces !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
CREATE INDEX deliveries_endpoint_id_session_id_watermark_delivery_id_idx ON deliveries (endpoint_id, session_id, watermark, delivery_id);
CREATE INDEX deliveries_event_id_idx ON deliveries (event_id);

-- Vision consents.
CREATE TABLE consents (
    consent_id        text   NOT NULL,
    enterprise_id     bigint NOT NULL,
    user_id           bigint NOT NULL,
    msg_token         text   NOT NULL,
    scope             text   NOT NULL,
    source_session_id text   NOT NULL,
    camera_id         text   NOT NULL,
    track_id          text   NOT NULL,
    media_revision    bigint NOT NULL,
    expires_at_ms     bigint NOT NULL,
    granted_at_ms     bigint NOT NULL,
    revision          bigint NOT NULL,
    revoked_at_ms     bigint NOT NULL,
    state             text   NOT NULL,
    CONSTRAINT consents_pkey PRIMARY KEY (consent_id),
    CONSTRAINT consents_enterprise_id_user_id_msg_token_key UNIQUE (enterprise_id, user_id, msg_token),
    CONSTRAINT consents_consent_id_check CHECK (
        octet_length(consent_id) BETWEEN 1 AND 64
        AND consent_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND consent_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT consents_msg_token_check CHECK (
        octet_length(msg_token) BETWEEN 1 AND 128
        AND msg_token !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND msg_token !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT consents_scope_check CHECK (scope IN ('cameraAI')),
    CONSTRAINT consents_source_session_id_check CHECK (
        octet_length(source_session_id) BETWEEN 1 AND 64
        AND source_session_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND source_session_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT consents_camera_id_check CHECK (
        octet_length(camera_id) BETWEEN 1 AND 64
        AND camera_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND camera_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT consents_track_id_check CHECK (
        octet_length(track_id) BETWEEN 1 AND 64
        AND track_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND track_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT consents_media_revision_check CHECK (media_revision BETWEEN 1 AND 9007199254740991),
    CONSTRAINT consents_expires_at_ms_check CHECK (expires_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT consents_granted_at_ms_check CHECK (granted_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT consents_revision_check CHECK (revision BETWEEN 1 AND 9007199254740991),
    CONSTRAINT consents_revoked_at_ms_check CHECK (revoked_at_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT consents_state_check CHECK (state IN ('granted', 'revoked'))
);

-- Recordings catalog.
CREATE TABLE recordings (
    recording_id      text    NOT NULL,
    product_id        text    NOT NULL,
    device_name       text    NOT NULL,
    camera_id         text    NOT NULL,
    start_time_ms     bigint  NOT NULL,
    end_time_ms       bigint  NOT NULL,
    duration_ms       bigint  NOT NULL,
    available         boolean NOT NULL,
    video_codec       text    NOT NULL,
    audio_codec       text,
    recording_version bigint  NOT NULL,
    CONSTRAINT recordings_pkey PRIMARY KEY (recording_id),
    CONSTRAINT recordings_recording_id_check CHECK (
        octet_length(recording_id) BETWEEN 1 AND 64
        AND recording_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND recording_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_camera_id_check CHECK (
        octet_length(camera_id) BETWEEN 1 AND 64
        AND camera_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND camera_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_start_time_ms_check CHECK (start_time_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT recordings_end_time_ms_check CHECK (end_time_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT recordings_duration_ms_check CHECK (duration_ms BETWEEN 0 AND 9007199254740991),
    CONSTRAINT recordings_video_codec_check CHECK (
        octet_length(video_codec) BETWEEN 1 AND 32
        AND video_codec !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND video_codec !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_audio_codec_check CHECK (
        octet_length(audio_codec) BETWEEN 1 AND 32
        AND audio_codec !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND audio_codec !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT recordings_recording_version_check CHECK (recording_version BETWEEN 1 AND 9007199254740991)
);
CREATE INDEX recordings_product_id_device_name_camera_id_start_time_ms_idx ON recordings (product_id, device_name, camera_id, start_time_ms);
