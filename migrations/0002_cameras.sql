-- 0002_cameras.sql - IP cameras of a device (igwctl camera add).
--
-- Copied from generated/sql/schema.sql (schema/tables.igw, table cameras);
-- applied once, in one transaction, by services.sh migrate.

-- IP cameras of a device; cameraId is unique per device.
CREATE TABLE cameras (
    product_id  text        NOT NULL,
    device_name text        NOT NULL,
    camera_id   text        NOT NULL,
    name        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT cameras_pkey PRIMARY KEY (product_id, device_name, camera_id),
    CONSTRAINT cameras_product_id_check CHECK (
        octet_length(product_id) BETWEEN 1 AND 64
        AND product_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND product_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT cameras_device_name_check CHECK (
        octet_length(device_name) BETWEEN 1 AND 64
        AND device_name !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND device_name !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    ),
    CONSTRAINT cameras_camera_id_check CHECK (
        octet_length(camera_id) BETWEEN 1 AND 64
        AND camera_id !~ '[\u0001-\u001f\u007f-\u009f*?%+#]'
        AND camera_id !~ '^[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|[\u0009-\u000d \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]$'
    )
);
