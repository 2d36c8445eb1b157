-- 0015_playback.sql - recordings reported by cameras and recordPlayback
-- sessions (issue 17). Mirrors generated/sql/schema.sql (schema/tables.igw:
-- sessions, recordings); applied once, in one transaction, by services.sh
-- migrate.
--
-- A recording is its camera's: the catalog's key becomes (product_id,
-- device_name, recording_id), so one device's ids can never name, overwrite
-- or delete another device's recordings. updated_at: when the camera last
-- reported it.

ALTER DOMAIN command_method DROP CONSTRAINT command_method_check;
ALTER DOMAIN command_method ADD CONSTRAINT command_method_check CHECK (
    VALUE IN ('interaction.open', 'interaction.end', 'interaction.join', 'interaction.leave',
            'interaction.subscribe', 'interaction.mediaOffer', 'interaction.mediaState',
            'interaction.trackControl', 'interaction.configure',
            'interaction.processorControl', 'interaction.control', 'messageSend',
            'device.action', 'device.propertyControl', 'interaction.playbackControl')
);

CREATE DOMAIN playback_state AS text CONSTRAINT playback_state_check CHECK (VALUE IN ('loaded', 'ready', 'playing', 'paused'));
CREATE DOMAIN sessions_position_ms AS bigint CONSTRAINT sessions_position_ms_check CHECK (VALUE BETWEEN 0 AND 9007199254740991);

ALTER TABLE sessions
    ADD COLUMN recording_id      ident, -- recordPlayback: the recording it plays.
    ADD COLUMN recording_version revision, -- recordPlayback: the catalog's version at the open; another one ends the session.
    ADD COLUMN playback          playback_state, -- recordPlayback: what the camera's player does.
    ADD COLUMN position_ms       sessions_position_ms; -- recordPlayback: the camera's last reported position.

ALTER TABLE recordings
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
    DROP CONSTRAINT recordings_pkey,
    ADD CONSTRAINT recordings_pkey PRIMARY KEY (product_id, device_name, recording_id);
