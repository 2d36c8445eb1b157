-- recordings_gen.sql - the catalog make bench-recordings reads (run by
-- bench_recordings.sh with psql, after src/ops/provision.sh's demo tenant):
--
--   psql -v devices=100 -v cameras=10 -v segments=1000 -v other_devices=10 -f recordings_gen.sql
--
-- The bench user is the demo's user 1001 (enterprise 1). Product benchcam01
-- has :devices devices bcam-000.. of :cameras cameras cam-0.. each; 1001
-- owns nine devices in ten, user 1002 owns the tenth and has granted it to
-- 1001 (the rights check takes both paths). Enterprise 2's product
-- benchother01 has :other_devices devices ocam-000.. of user 2001 with the
-- same catalog: rows the bench user has no right to, beside its own.
-- Each camera recorded contiguous 60 s segments back from now, :segments of
-- them (the first start of each camera shifted by up to 59 s): some cut
-- short (a reboot: shorter, then the next one starts on time), version 1
-- mostly, 2 and 3 for a few (re-encoded), the oldest 2 % and a few others
-- unavailable (storage expired, a lost upload), H264 on seven cameras in
-- ten and H265 on the others, no audio on the tenth camera of each device.
-- One INSERT ... SELECT into the table as the migrations make it (its two
-- indexes and checks), then ANALYZE.
\set ON_ERROR_STOP on
BEGIN;
INSERT INTO products (product_id, enterprise_id, name, model) VALUES
    ('benchcam01', 1, 'Bench cameras', '{"properties":[],"events":[],"actions":[]}'),
    ('benchother01', 2, 'Bench cameras of another enterprise', '{"properties":[],"events":[],"actions":[]}');
INSERT INTO devices (product_id, device_name, enterprise_id, owner_user_id, secret)
SELECT p, n, e, u, 'YmVuY2hiZW5jaGJlbmNoYmVuY2g='
FROM (SELECT 'benchcam01' p, 'bcam-' || lpad(d::text, 3, '0') n, 1 e, CASE WHEN d % 10 = 9 THEN 1002 ELSE 1001 END u
      FROM generate_series(0, :devices - 1) d
      UNION ALL
      SELECT 'benchother01', 'ocam-' || lpad(d::text, 3, '0'), 2, 2001 FROM generate_series(0, :other_devices - 1) d) x;
INSERT INTO device_grants (product_id, device_name, user_id)
SELECT product_id, device_name, 1001 FROM devices WHERE product_id = 'benchcam01' AND owner_user_id = 1002;
INSERT INTO cameras (product_id, device_name, camera_id, name)
SELECT d.product_id, d.device_name, 'cam-' || c, 'Camera ' || c
FROM devices d, generate_series(0, :cameras - 1) c WHERE d.product_id IN ('benchcam01', 'benchother01');
COMMIT;

\timing on
INSERT INTO recordings (recording_id, product_id, device_name, camera_id, start_time_ms, end_time_ms, duration_ms,
                        available, video_codec, audio_codec, recording_version)
SELECT c.device_name || '.' || c.camera_id || '.' || s.start, c.product_id, c.device_name, c.camera_id, s.start,
       s.start + s.dur, s.dur,
       NOT (k >= :segments - :segments / 50 OR (c.ci * 31 + k * 7) % 397 = 0),
       CASE WHEN c.ci % 10 < 7 THEN 'H264' ELSE 'H265' END,
       CASE WHEN c.ci % 10 = 9 THEN NULL WHEN c.ci % 2 = 0 THEN 'opus' ELSE 'aac' END,
       CASE WHEN k % 101 = 0 THEN 3 WHEN k % 17 = 0 THEN 2 ELSE 1 END
FROM (SELECT product_id, device_name, camera_id, substr(camera_id, 5)::int ci,
             (hashtext(device_name || camera_id) & 65535) % 60 * 1000 AS shift
      FROM cameras WHERE product_id IN ('benchcam01', 'benchother01')) c,
     generate_series(0, :segments - 1) k,
     LATERAL (SELECT (floor(extract(epoch FROM now())) * 1000)::bigint - c.shift - (k + 1) * 60000 AS start,
                     CASE WHEN (c.ci + k) % 211 = 0 THEN 20000 + (k % 40) * 1000 ELSE 60000 END AS dur) s;
ANALYZE recordings;
ANALYZE devices;
ANALYZE cameras;
ANALYZE device_grants;
\timing off
