-- catalog.sql - a normalized description of the current database's own
-- objects, one line each, in a fixed order (byte order, not the locale's).
--
-- tests/sql/drift.sh runs it (psql -XAt) against a database built from
-- migrations/ and one built from generated/sql/schema.sql and diffs the two.
-- Everything that changes behaviour is described: relations, columns (type,
-- nullability, default, identity, generated, collation), constraints, indexes,
-- triggers, functions, enum and domain types, extensions. Owners, privileges,
-- comments and OIDs are left out: they differ between equal schemas.
-- Schema names stay in every line, except inside index and trigger definitions
-- whose relation is already named by the line.

WITH nsp AS (
    SELECT oid, nspname
    FROM pg_namespace
    WHERE nspname NOT IN ('information_schema', 'pg_catalog', 'pg_toast')
      AND nspname !~ '^pg_(temp|toast_temp)_'
),
rel AS (
    SELECT c.oid, c.relkind, c.relpersistence, c.reloptions,
           n.nspname || '.' || c.relname AS qname
    FROM pg_class c
    JOIN nsp n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
),
lines (section, object, sub, line) AS (
    SELECT 0, nspname, '', 'schema ' || nspname
    FROM nsp

    UNION ALL
    SELECT 1, e.extname, '', 'extension ' || e.extname || ' in ' || n.nspname
    FROM pg_extension e
    JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname <> 'plpgsql'

    UNION ALL
    SELECT 2, n.nspname || '.' || t.typname, '',
           'type ' || n.nspname || '.' || t.typname || ' enum ('
           || (SELECT string_agg(quote_literal(l.enumlabel), ', ' ORDER BY l.enumsortorder)
               FROM pg_enum l WHERE l.enumtypid = t.oid) || ')'
    FROM pg_type t
    JOIN nsp n ON n.oid = t.typnamespace
    WHERE t.typtype = 'e'

    UNION ALL
    SELECT 2, n.nspname || '.' || t.typname, '',
           'domain ' || n.nspname || '.' || t.typname || ' '
           || format_type(t.typbasetype, t.typtypmod)
           || CASE WHEN t.typnotnull THEN ' not null' ELSE '' END
           || COALESCE(' default ' || pg_get_expr(t.typdefaultbin, 0), '')
           || COALESCE((SELECT ' ' || string_agg(c.conname || ' ' || pg_get_constraintdef(c.oid), ' '
                                                  ORDER BY c.conname COLLATE "C")
                        FROM pg_constraint c WHERE c.contypid = t.oid), '')
    FROM pg_type t
    JOIN nsp n ON n.oid = t.typnamespace
    WHERE t.typtype = 'd'

    UNION ALL
    SELECT 3, r.qname, '',
           'relation ' || r.qname || ' '
           || CASE r.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table'
                             WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                             WHEN 'S' THEN 'sequence' WHEN 'f' THEN 'foreign table'
                             ELSE 'composite type' END
           || CASE r.relpersistence WHEN 'u' THEN ' unlogged' ELSE '' END
           || COALESCE(' with ' || array_to_string(r.reloptions, ','), '')
           || CASE WHEN r.relkind IN ('v', 'm')
                   THEN ' as ' || regexp_replace(pg_get_viewdef(r.oid), '\s+', ' ', 'g')
                   ELSE '' END
    FROM rel r

    UNION ALL
    -- Position among live columns, so a dropped column leaves no gap.
    SELECT 4, r.qname, lpad(row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum)::text, 5, '0'),
           'column ' || r.qname || ' '
           || row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) || ' '
           || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
           || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
           || COALESCE(CASE a.attgenerated WHEN 's' THEN ' generated always as ' ELSE ' default ' END
                       || pg_get_expr(d.adbin, d.adrelid), '')
           || CASE a.attidentity WHEN 'a' THEN ' identity always' WHEN 'd' THEN ' identity by default'
                                 ELSE '' END
           || CASE WHEN a.attcollation <> t.typcollation
                   THEN ' collate ' || quote_ident(co.collname) ELSE '' END
    FROM rel r
    JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE r.relkind <> 'S'

    UNION ALL
    SELECT 5, r.qname, c.conname,
           'constraint ' || r.qname || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
    FROM rel r
    JOIN pg_constraint c ON c.conrelid = r.oid

    UNION ALL
    SELECT 6, r.qname, i.relname,
           'index ' || r.qname || ' ' || i.relname || ' '
           || regexp_replace(pg_get_indexdef(x.indexrelid), ' ON (ONLY )?\S+\.', ' ON \1')
    FROM rel r
    JOIN pg_index x ON x.indrelid = r.oid
    JOIN pg_class i ON i.oid = x.indexrelid

    UNION ALL
    SELECT 7, r.qname, g.tgname,
           'trigger ' || r.qname || ' ' || g.tgname || ' '
           || regexp_replace(pg_get_triggerdef(g.oid), ' ON \S+\.', ' ON ')
    FROM rel r
    JOIN pg_trigger g ON g.tgrelid = r.oid AND NOT g.tgisinternal

    UNION ALL
    SELECT 8, p.oid::regprocedure::text, '',
           'function ' || n.nspname || '.' || p.oid::regprocedure::text || ' '
           || regexp_replace(pg_get_functiondef(p.oid), '\s+', ' ', 'g')
    FROM pg_proc p
    JOIN nsp n ON n.oid = p.pronamespace
    WHERE p.prokind IN ('f', 'p')
      AND NOT EXISTS (SELECT 1 FROM pg_depend dep
                      WHERE dep.objid = p.oid AND dep.classid = 'pg_proc'::regclass AND dep.deptype = 'e')
)
SELECT line
FROM lines
ORDER BY section, object COLLATE "C", sub COLLATE "C", line COLLATE "C";
