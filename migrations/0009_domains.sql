-- 0009_domains.sql - the columns' rules move from table CHECK constraints
-- into domains, the columns typed by them: PostgreSQL re-reads a table
-- CHECK's stored expression in every statement that writes the table,
-- while a domain's is read once per session (issue 4, section 8: with the
-- regular-expression constants that reading took a third of a one-row
-- insert's time). The same conditions: no stored row can fail them.
--
-- Mirrors generated/sql/schema.sql (codegen/emit_sql.c); applied once, in
-- one transaction, by services.sh migrate. Operations: each ALTER rewrites
-- its table and rebuilds its indexes under an exclusive lock, so on a
-- populated ledger it needs downtime and room for a second copy of the
-- tables until the commit.

-- Opaque identifier: printable, no wildcard, no leading or trailing whitespace.
CREATE DOMAIN ident AS text CONSTRAINT ident_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 64
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
-- First segment of the MQTT topic; a leading '$' is tolerated.
CREATE DOMAIN handle AS text CONSTRAINT handle_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 16
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
-- Operation type of the topic (property, event, action, service, ...).
CREATE DOMAIN msg_type AS text CONSTRAINT msg_type_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 32
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
CREATE DOMAIN device_messages_method AS text CONSTRAINT device_messages_method_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 64
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
-- Client token: idempotency key and result correlation.
CREATE DOMAIN token AS text CONSTRAINT token_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 128
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
CREATE DOMAIN files_file_path AS text CONSTRAINT files_file_path_check CHECK (octet_length(VALUE) BETWEEN 1 AND 512);
-- UTC Unix time in milliseconds.
CREATE DOMAIN time_ms AS bigint CONSTRAINT time_ms_check CHECK (VALUE BETWEEN 0 AND 9007199254740991);
CREATE DOMAIN command_method AS text CONSTRAINT command_method_check CHECK (
    VALUE IN ('interaction.open', 'interaction.end', 'interaction.join', 'interaction.leave',
            'interaction.subscribe', 'interaction.mediaOffer', 'interaction.mediaState',
            'interaction.trackControl', 'interaction.configure',
            'interaction.processorControl', 'interaction.control', 'messageSend',
            'device.action', 'device.propertyControl')
);
CREATE DOMAIN session_state AS text CONSTRAINT session_state_check CHECK (VALUE IN ('invited', 'established', 'ended'));
CREATE DOMAIN sessions_reason AS text CONSTRAINT sessions_reason_check CHECK (octet_length(VALUE) BETWEEN 1 AND 256);
-- Generation counter, safe positive integer.
CREATE DOMAIN revision AS bigint CONSTRAINT revision_check CHECK (VALUE BETWEEN 1 AND 9007199254740991);
CREATE DOMAIN delivery_state AS text CONSTRAINT delivery_state_check CHECK (VALUE IN ('pending', 'acknowledged', 'redelivered', 'expired'));
CREATE DOMAIN consent_scope AS text CONSTRAINT consent_scope_check CHECK (VALUE IN ('cameraAI'));
CREATE DOMAIN consent_state AS text CONSTRAINT consent_state_check CHECK (VALUE IN ('granted', 'revoked'));
CREATE DOMAIN recordings_duration_ms AS bigint CONSTRAINT recordings_duration_ms_check CHECK (VALUE BETWEEN 0 AND 9007199254740991);
CREATE DOMAIN recordings_video_codec AS text CONSTRAINT recordings_video_codec_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 32
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);
CREATE DOMAIN recordings_audio_codec AS text CONSTRAINT recordings_audio_codec_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 32
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);

ALTER TABLE products
    DROP CONSTRAINT products_product_id_check,
    ALTER COLUMN product_id TYPE ident;

ALTER TABLE devices
    DROP CONSTRAINT devices_product_id_check,
    DROP CONSTRAINT devices_device_name_check,
    DROP CONSTRAINT devices_gateway_product_id_check,
    DROP CONSTRAINT devices_gateway_device_name_check,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident,
    ALTER COLUMN gateway_product_id TYPE ident,
    ALTER COLUMN gateway_device_name TYPE ident;

ALTER TABLE device_grants
    DROP CONSTRAINT device_grants_product_id_check,
    DROP CONSTRAINT device_grants_device_name_check,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident;

ALTER TABLE device_messages
    DROP CONSTRAINT device_messages_product_id_check,
    DROP CONSTRAINT device_messages_device_name_check,
    DROP CONSTRAINT device_messages_handle_check,
    DROP CONSTRAINT device_messages_msg_type_check,
    DROP CONSTRAINT device_messages_method_check,
    DROP CONSTRAINT device_messages_msg_token_check,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident,
    ALTER COLUMN handle TYPE handle,
    ALTER COLUMN msg_type TYPE msg_type,
    ALTER COLUMN method TYPE device_messages_method,
    ALTER COLUMN msg_token TYPE token;

ALTER TABLE files
    DROP CONSTRAINT files_file_path_check,
    DROP CONSTRAINT files_product_id_check,
    DROP CONSTRAINT files_device_name_check,
    ALTER COLUMN file_path TYPE files_file_path,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident;

ALTER TABLE endpoints
    DROP CONSTRAINT endpoints_endpoint_id_check,
    DROP CONSTRAINT endpoints_expires_at_ms_check,
    ALTER COLUMN endpoint_id TYPE ident,
    ALTER COLUMN expires_at_ms TYPE time_ms;

ALTER TABLE commands
    DROP CONSTRAINT commands_endpoint_id_check,
    DROP CONSTRAINT commands_msg_token_check,
    DROP CONSTRAINT commands_method_check,
    DROP CONSTRAINT commands_session_id_check,
    ALTER COLUMN endpoint_id TYPE ident,
    ALTER COLUMN msg_token TYPE token,
    ALTER COLUMN method TYPE command_method,
    ALTER COLUMN session_id TYPE ident;

ALTER TABLE device_commands
    DROP CONSTRAINT device_commands_product_id_check,
    DROP CONSTRAINT device_commands_device_name_check,
    DROP CONSTRAINT device_commands_device_token_check,
    DROP CONSTRAINT device_commands_endpoint_id_check,
    DROP CONSTRAINT device_commands_msg_token_check,
    DROP CONSTRAINT device_commands_method_check,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident,
    ALTER COLUMN device_token TYPE token,
    ALTER COLUMN endpoint_id TYPE ident,
    ALTER COLUMN msg_token TYPE token,
    ALTER COLUMN method TYPE command_method;

ALTER TABLE sessions
    DROP CONSTRAINT sessions_session_id_check,
    DROP CONSTRAINT sessions_endpoint_id_check,
    DROP CONSTRAINT sessions_state_check,
    DROP CONSTRAINT sessions_reason_check,
    DROP CONSTRAINT sessions_product_id_check,
    DROP CONSTRAINT sessions_device_name_check,
    ALTER COLUMN session_id TYPE ident,
    ALTER COLUMN endpoint_id TYPE ident,
    ALTER COLUMN state TYPE session_state,
    ALTER COLUMN reason TYPE sessions_reason,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident;

ALTER TABLE events
    DROP CONSTRAINT events_session_id_check,
    DROP CONSTRAINT events_msg_token_check,
    DROP CONSTRAINT events_event_seq_check,
    ALTER COLUMN session_id TYPE ident,
    ALTER COLUMN msg_token TYPE token,
    ALTER COLUMN event_seq TYPE revision;

ALTER TABLE deliveries
    DROP CONSTRAINT deliveries_delivery_id_check,
    DROP CONSTRAINT deliveries_endpoint_id_check,
    DROP CONSTRAINT deliveries_state_check,
    DROP CONSTRAINT deliveries_expires_at_ms_check,
    DROP CONSTRAINT deliveries_replaces_check,
    ALTER COLUMN delivery_id TYPE ident,
    ALTER COLUMN endpoint_id TYPE ident,
    ALTER COLUMN state TYPE delivery_state,
    ALTER COLUMN expires_at_ms TYPE time_ms,
    ALTER COLUMN replaces TYPE ident;

ALTER TABLE consents
    DROP CONSTRAINT consents_consent_id_check,
    DROP CONSTRAINT consents_msg_token_check,
    DROP CONSTRAINT consents_scope_check,
    DROP CONSTRAINT consents_source_session_id_check,
    DROP CONSTRAINT consents_camera_id_check,
    DROP CONSTRAINT consents_track_id_check,
    DROP CONSTRAINT consents_media_revision_check,
    DROP CONSTRAINT consents_expires_at_ms_check,
    DROP CONSTRAINT consents_granted_at_ms_check,
    DROP CONSTRAINT consents_revision_check,
    DROP CONSTRAINT consents_revoked_at_ms_check,
    DROP CONSTRAINT consents_state_check,
    ALTER COLUMN consent_id TYPE ident,
    ALTER COLUMN msg_token TYPE token,
    ALTER COLUMN scope TYPE consent_scope,
    ALTER COLUMN source_session_id TYPE ident,
    ALTER COLUMN camera_id TYPE ident,
    ALTER COLUMN track_id TYPE ident,
    ALTER COLUMN media_revision TYPE revision,
    ALTER COLUMN expires_at_ms TYPE time_ms,
    ALTER COLUMN granted_at_ms TYPE time_ms,
    ALTER COLUMN revision TYPE revision,
    ALTER COLUMN revoked_at_ms TYPE time_ms,
    ALTER COLUMN state TYPE consent_state;

ALTER TABLE recordings
    DROP CONSTRAINT recordings_recording_id_check,
    DROP CONSTRAINT recordings_product_id_check,
    DROP CONSTRAINT recordings_device_name_check,
    DROP CONSTRAINT recordings_camera_id_check,
    DROP CONSTRAINT recordings_start_time_ms_check,
    DROP CONSTRAINT recordings_end_time_ms_check,
    DROP CONSTRAINT recordings_duration_ms_check,
    DROP CONSTRAINT recordings_video_codec_check,
    DROP CONSTRAINT recordings_audio_codec_check,
    DROP CONSTRAINT recordings_recording_version_check,
    ALTER COLUMN recording_id TYPE ident,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident,
    ALTER COLUMN camera_id TYPE ident,
    ALTER COLUMN start_time_ms TYPE time_ms,
    ALTER COLUMN end_time_ms TYPE time_ms,
    ALTER COLUMN duration_ms TYPE recordings_duration_ms,
    ALTER COLUMN video_codec TYPE recordings_video_codec,
    ALTER COLUMN audio_codec TYPE recordings_audio_codec,
    ALTER COLUMN recording_version TYPE revision;

ALTER TABLE cameras
    DROP CONSTRAINT cameras_product_id_check,
    DROP CONSTRAINT cameras_device_name_check,
    DROP CONSTRAINT cameras_camera_id_check,
    ALTER COLUMN product_id TYPE ident,
    ALTER COLUMN device_name TYPE ident,
    ALTER COLUMN camera_id TYPE ident;
