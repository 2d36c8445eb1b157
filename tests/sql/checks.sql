-- checks.sql - the generated CHECK constraints judge values as the strict
-- decoders do.
--
-- The cases mirror src/rt/decode.c (igw_format_*): the database must
-- accept every value the decoder accepts. Runs (from tests/sql/drift.sh) against a database loaded with
-- tests/codegen/golden/sql/formats.sql, whose table `samples` has one column
-- per rule kind. Each case inserts a valid row with one column replaced and
-- expects it accepted or refused by a CHECK; the first wrong verdict raises
-- and stops psql. Nothing is kept: every insert is undone.

BEGIN;

-- Inserts the base row with `col` set to `val`; returns whether a CHECK
-- refused it. Any other error (type, NOT NULL) propagates: it means the
-- case itself is wrong.
CREATE FUNCTION pg_temp.refused(col text, val text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    cols text[] := ARRAY['sample_id', 'name', 'lang', 'note', 'count', 'color', 'lamp'];
    vals text[] := ARRAY['1', 'a', 'en', '', '0', 'red', 'off'];
BEGIN
    IF array_position(cols, col) IS NULL THEN
        RAISE EXCEPTION 'checks.sql: no column %', col;
    END IF;
    vals[array_position(cols, col)] := val;
    BEGIN
        EXECUTE format('INSERT INTO samples (%s) VALUES (%s)', array_to_string(cols, ', '),
                       (SELECT string_agg(quote_nullable(v), ', ' ORDER BY i)
                        FROM unnest(vals) WITH ORDINALITY AS u(v, i)));
        -- Accepted: undo the row so every case starts from an empty table.
        RAISE EXCEPTION USING ERRCODE = 'IGW00';
    EXCEPTION
        WHEN check_violation THEN RETURN true;
        WHEN SQLSTATE 'IGW00' THEN RETURN false;
    END;
END
$$;

CREATE FUNCTION pg_temp.expect(col text, val text, accept boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF pg_temp.refused(col, val) = accept THEN
        RAISE EXCEPTION 'checks.sql: samples.% = % should be %', col, quote_nullable(val),
            CASE WHEN accept THEN 'accepted' ELSE 'refused' END;
    END IF;
END
$$;

SELECT pg_temp.expect(col, val, accept)
FROM (VALUES
    -- canonical_id: decimal 1..9007199254740991, no sign, no leading zero, no space.
    ('sample_id', '1', true),
    ('sample_id', '9', true),
    ('sample_id', '10', true),
    ('sample_id', '999999999999999', true),
    ('sample_id', '1000000000000000', true),
    ('sample_id', '9007199254740991', true),
    ('sample_id', '9007199254740992', false),
    ('sample_id', '9999999999999999', false),
    ('sample_id', '10000000000000000', false),
    ('sample_id', '0', false),
    ('sample_id', '01', false),
    ('sample_id', '-1', false),
    ('sample_id', '+1', false),
    ('sample_id', ' 1', false),
    ('sample_id', '1 ', false),
    ('sample_id', E'1\n', false),
    ('sample_id', '1e3', false),
    ('sample_id', '', false),
    ('sample_id', U&'\0661', false),               -- ARABIC-INDIC DIGIT ONE
    -- identifier, 1..8 bytes: printable, no wildcard, no edge whitespace.
    ('name', 'a', true),
    ('name', 'a b', true),
    ('name', '$thing', true),
    ('name', 'a.b-c_d', true),
    ('name', 'x/y:z', true),
    ('name', 'éééé', true),                        -- 8 bytes
    ('name', U&'a\00A0x', true),                  -- NBSP inside is fine
    ('name', U&'\00A0x', false),                  -- Unicode whitespace at an edge
    ('name', U&'x\3000', false),                  -- IDEOGRAPHIC SPACE at the end
    ('name', U&'a\0085', false),                  -- C1 controls are controls too
    ('name', U&'a\009Fb', false),
    ('name', 'ééééé', false),                      -- 10 bytes
    ('name', '123456789', false),
    ('name', '', false),
    ('name', ' a', false),
    ('name', 'a ', false),
    ('name', E'\ta', false),
    ('name', E'a\t', false),
    ('name', E'a\nb', false),
    ('name', E'a\rb', false),
    ('name', E'a\x0bb', false),                    -- VT
    ('name', E'a\fb', false),
    ('name', E'a\x01', false),
    ('name', E'a\x1f', false),
    ('name', E'a\x7f', false),                     -- DEL
    ('name', 'a*', false),
    ('name', 'a?', false),
    ('name', 'a%', false),
    ('name', 'a+', false),
    ('name', 'a#', false),
    -- bcp47, 2..35 bytes; NULL allowed (nullable column).
    ('lang', NULL, true),
    ('lang', 'en', true),
    ('lang', 'en-US', true),
    ('lang', 'zh-Hant-TW', true),
    ('lang', 'de-CH-1901', true),
    ('lang', 'abcdefgh-x', true),
    ('lang', 'x-private', false),                  -- the decoder wants 2-8 letters first
    ('lang', 'e', false),
    ('lang', 'en-', false),
    ('lang', '-en', false),
    ('lang', 'en--US', false),
    ('lang', 'en_US', false),
    ('lang', '1en', false),
    ('lang', 'abcdefghi', false),
    ('lang', 'en-abcdefghi', false),
    ('lang', 'é-x', false),
    ('lang', 'en ', false),
    -- plain string, 0..4 bytes.
    ('note', '', true),
    ('note', 'abcd', true),
    ('note', 'éé', true),
    ('note', 'abcde', false),
    ('note', 'ééé', false),
    -- int -5..5.
    ('count', '-5', true),
    ('count', '5', true),
    ('count', '-6', false),
    ('count', '6', false),
    -- enum, with a quote in a value.
    ('color', 'red', true),
    ('color', 'it''s', true),
    ('color', 'Red', false),
    ('color', 'blue', false),
    ('color', '', false),
    -- machine states.
    ('lamp', 'off', true),
    ('lamp', 'on', true),
    ('lamp', 'dim', false)
) AS cases (col, val, accept);

ROLLBACK;
