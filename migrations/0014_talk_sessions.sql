-- 0014_talk_sessions.sql - ipcTalk sessions (issue 16): the IM call a talk
-- session's media leg is bound to for good, the caller's join instance at
-- the open, and the live talk sessions of a call (two-party talk allows
-- one). Mirrors generated/sql/schema.sql (schema/tables.igw: sessions);
-- applied once, in one transaction, by services.sh migrate. Nullable
-- columns without defaults: no table rewrite.

-- Original IM live group-call id (not a device sessionId).
CREATE DOMAIN call_id AS text CONSTRAINT call_id_check CHECK (
    octet_length(VALUE) BETWEEN 1 AND 96
    AND VALUE !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
    AND VALUE !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
);

ALTER TABLE sessions
    ADD COLUMN call_id      call_id, -- ipcTalk: the IM call its media leg is bound to, for good.
    ADD COLUMN member_epoch bigint; -- ipcTalk: the caller's join instance (memberEpoch) the session was opened in.

CREATE INDEX sessions_call_id_idx ON sessions (call_id) WHERE state <> 'ended';
