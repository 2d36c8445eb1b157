/* emit_sql.c - generated/sql/schema.sql: the PostgreSQL DDL of every table.
 *
 * One CREATE TABLE per table in declaration order (sema guarantees that a
 * referenced table comes first, so the file applies top to bottom), then its
 * secondary indexes, then the trigger and function of each `notify` clause. Every constraint and index gets an explicit name so the
 * catalog of a database built from this file can be compared line by line
 * with one built from migrations/ (tests/sql/drift.sh).
 *
 * The field rule a column derives from (`from`) and the states of its
 * machine (`machine`) become a domain's CHECK, the column typed by that
 * domain. They are a backstop behind the generated strict decoders: each
 * one accepts exactly what the decoder (src/rt/decode.c) accepts, so a
 * value that passed the API never fails an INSERT, and tests/sql/checks.sql
 * holds them to that. A domain, not a table CHECK: PostgreSQL reads a
 * table CHECK's stored expression back from its text form in every
 * statement that writes the table, once per constraint, while a domain's
 * is read once per session (its type cache). With regular-expression and
 * IN-list constants that reading took a third of a one-row insert's time:
 * an INSERT of three identifier columns took 152 us with table CHECKs and
 * 113 us with domains (98 us with no check at all). Domains are
 * declared first, then the tables in declaration order.
 *
 * The file has no BEGIN/COMMIT: whoever applies it decides transactions. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

/* Unicode White_Space as a regex bracket body (igw_format_identifier's set;
 * C0 and C1 members are refused as controls anyway). */
#define SQL_SPACE "\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"

/* PostgreSQL truncates longer identifiers silently (NAMEDATALEN - 1). */
#define PG_NAME_MAX 63

/* Keywords PostgreSQL 15 refuses as unquoted table or column names
 * (pg_get_keywords() categories R and T). Names are never quoted here, so a
 * schema using one is refused with a clear message instead of failing later
 * with a syntax error in psql. */
static const char *const pg_reserved[] = {
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric",
    "authorization", "binary", "both", "case", "cast", "check", "collate", "collation",
    "column", "concurrently", "constraint", "create", "cross", "current_catalog",
    "current_date", "current_role", "current_schema", "current_time", "current_timestamp",
    "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end",
    "except", "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant",
    "group", "having", "ilike", "in", "initially", "inner", "intersect", "into", "is",
    "isnull", "join", "lateral", "leading", "left", "like", "limit", "localtime",
    "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or",
    "order", "outer", "overlaps", "placing", "primary", "references", "returning", "right",
    "select", "session_user", "similar", "some", "symmetric", "table", "tablesample",
    "then", "to", "trailing", "true", "union", "unique", "user", "using", "variadic",
    "verbose", "when", "where", "window", "with",
};

/* Names a domain cannot take: PostgreSQL's built-in types (pg_catalog comes
 * first on the search path, so a column typed `name` would silently be the
 * built-in one, without the CHECK) and the keywords that may name columns
 * but not types (pg_get_keywords() category C; R and T are pg_reserved). */
static const char *const pg_type_names[] = {
    "aclitem", "any", "anyarray", "anycompatible", "anycompatiblearray", "anycompatiblemultirange",
    "anycompatiblenonarray", "anycompatiblerange", "anyelement", "anyenum", "anymultirange", "anynonarray",
    "anyrange", "between", "bigint", "bit", "bool", "boolean", "box", "bpchar", "bytea", "char", "character",
    "cid", "cidr", "circle", "coalesce", "cstring", "date", "datemultirange", "daterange", "dec", "decimal",
    "event_trigger", "exists", "extract", "fdw_handler", "float", "float4", "float8", "greatest", "grouping",
    "gtsvector", "index_am_handler", "inet", "inout", "int", "int2", "int2vector", "int4", "int4multirange",
    "int4range", "int8", "int8multirange", "int8range", "integer", "internal", "interval", "json", "jsonb",
    "jsonpath", "language_handler", "least", "line", "lseg", "macaddr", "macaddr8", "money", "name",
    "national", "nchar", "none", "normalize", "nullif", "numeric", "nummultirange", "numrange", "oid",
    "oidvector", "out", "overlay", "path", "point", "polygon", "position", "precision", "real", "record",
    "refcursor", "regclass", "regcollation", "regconfig", "regdictionary", "regnamespace", "regoper",
    "regoperator", "regproc", "regprocedure", "regrole", "regtype", "row", "setof", "smallint", "substring",
    "table_am_handler", "text", "tid", "time", "timestamp", "timestamptz", "timetz", "treat", "trigger",
    "trim", "tsm_handler", "tsmultirange", "tsquery", "tsrange", "tstzmultirange", "tstzrange", "tsvector",
    "txid_snapshot", "unknown", "uuid", "values", "varbit", "varchar", "void", "xid", "xid8", "xml",
    "xmlattributes", "xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse",
    "xmlpi", "xmlroot", "xmlserialize", "xmltable",
};

/* ---- names ---------------------------------------------------------------- */

static bool listed(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}
#define LISTED(list, name) listed((list), sizeof(list) / sizeof((list)[0]), (name))

/* A schema name usable unquoted: lower case (PostgreSQL folds unquoted names),
 * not a reserved keyword, not truncated. */
static bool check_ident(igw_loc loc, const char *what, const char *name)
{
    bool ok = (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_';
    for (const char *p = name; *p && ok; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok) {
        igw_diag_error(loc, "%s '%s' must match [a-z_][a-z0-9_]* to be a PostgreSQL name", what, name);
        return false;
    }
    if (strlen(name) > PG_NAME_MAX) {
        igw_diag_error(loc, "%s '%s' is longer than %d bytes", what, name, PG_NAME_MAX);
        return false;
    }
    if (LISTED(pg_reserved, name)) {
        igw_diag_error(loc, "%s '%s' is a reserved word in PostgreSQL", what, name);
        return false;
    }
    return true;
}

/* Names that must be unique together: relations (tables and indexes share one
 * namespace per schema) or the constraints of one table. */
typedef struct nameset {
    igw_vec names; /* char* */
} nameset;

static bool nameset_add(nameset *ns, igw_loc loc, const char *name)
{
    if (strlen(name) > PG_NAME_MAX) {
        igw_diag_error(loc, "derived name '%s' is longer than %d bytes; PostgreSQL would truncate it", name,
                       PG_NAME_MAX);
        return false;
    }
    FOR(ns->names, char, n)
        if (strcmp(n, name) == 0) {
            igw_diag_error(loc, "derived name '%s' is used twice", name);
            return false;
        }
    igw_vec_push(&ns->names, igw_xstrdup(name));
    return true;
}

static bool nameset_has(const nameset *ns, const char *name)
{
    FOR(ns->names, char, n)
        if (strcmp(n, name) == 0)
            return true;
    return false;
}

static void nameset_free(nameset *ns)
{
    FOR(ns->names, char, n)
        free(n);
    free(ns->names.v);
    memset(ns, 0, sizeof *ns);
}

/* "<table>_<col1>_<col2>..._<suffix>", PostgreSQL's own naming pattern. */
static char *index_name(const igw_table *t, const igw_index *ix, const char *suffix)
{
    igw_out o;
    igw_out_init(&o);
    igw_out_puts(&o, t->name);
    FOR(ix->columns, const char, c)
        igw_out_printf(&o, "_%s", c);
    igw_out_printf(&o, "_%s", suffix);
    return o.buf;
}

/* ---- literals ------------------------------------------------------------- */

/* A standard SQL string literal: quotes doubled, everything else verbatim
 * (with standard_conforming_strings, on since PostgreSQL 9.1, a backslash
 * is an ordinary character). */
static void sql_literal(igw_out *o, const char *s)
{
    igw_out_write(o, "'", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            igw_out_write(o, "'", 1);
        igw_out_write(o, p, 1);
    }
    igw_out_write(o, "'", 1);
}

/* The column default. The parser stores string defaults as '<text>' with the
 * text unescaped, so the text is re-quoted here; a non-text column gets an
 * explicit cast so '{}' reads as the jsonb it is. */
static void default_expr(igw_out *o, const igw_column *c)
{
    const char *d = c->deflt;
    size_t n = strlen(d);
    if (strcmp(d, "now") == 0) {
        igw_out_puts(o, "now()");
    } else if (n >= 2 && d[0] == '\'' && d[n - 1] == '\'') {
        char *text = igw_xstrndup(d + 1, n - 2);
        sql_literal(o, text);
        free(text);
        if (strcmp(c->sqltype, "text") != 0)
            igw_out_printf(o, "::%s", c->sqltype);
    } else {
        igw_out_puts(o, d);
    }
}

/* A doc string on one line: comments must not be broken by newlines. */
static void doc_text(igw_out *o, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        igw_out_write(o, *p < 0x20 ? " " : (const char *)p, 1);
}

/* ---- CHECK conditions ----------------------------------------------------- */

/* Characters of values per line of an IN list before it wraps. */
#define IN_LIST_WIDTH 80

/* Conditions of one column's CHECK, ANDed; each a complete SQL expression. */
typedef struct conds {
    igw_vec v; /* char* */
} conds;

static void cond_add(conds *cs, igw_out *o)
{
    igw_vec_push(&cs->v, o->buf);
    igw_out_init(o);
}

/* Appends the i-th value of an IN list; long lists continue on lines of
 * their own to stay readable. `line` is where the current line starts. */
static void in_value(igw_out *o, size_t *line, int i, const char *value)
{
    igw_out item;
    igw_out_init(&item);
    sql_literal(&item, value);
    if (i) {
        bool wrap = o->len - *line + item.len > IN_LIST_WIDTH;
        igw_out_puts(o, wrap ? ",\n            " : ", ");
        if (wrap)
            *line = o->len;
    }
    igw_out_write(o, item.buf, item.len);
    igw_out_free(&item);
}

/* col IN (the enum's values). */
static void enum_cond(conds *cs, const char *col, const igw_type *t)
{
    igw_out o;
    igw_out_init(&o);
    igw_out_printf(&o, "%s IN (", col);
    size_t line = o.len;
    FOR(t->values, const char, v)
        in_value(&o, &line, v_i, v);
    igw_out_puts(&o, ")");
    cond_add(cs, &o);
}

/* col IN (the machine's state names). */
static void machine_cond(conds *cs, const char *col, const igw_machine *m)
{
    igw_out o;
    igw_out_init(&o);
    igw_out_printf(&o, "%s IN (", col);
    size_t line = o.len;
    FOR(m->states, igw_state, st)
        in_value(&o, &line, st_i, st->name);
    igw_out_puts(&o, ")");
    cond_add(cs, &o);
}

static void string_conds(conds *cs, const char *col, const igw_type *t)
{
    igw_out o;
    igw_out_init(&o);
    /* Bounds are bytes, as the decoder counts them, not characters. */
    igw_out_printf(&o, "octet_length(%s) BETWEEN %" PRId64 " AND %" PRId64, col, t->min_len, t->max_len);
    cond_add(cs, &o);
    switch (t->format) {
    case IGW_FMT_NONE:
        break;
    case IGW_FMT_CANONICAL_ID:
        /* 1..2^53-1 in decimal: no sign, no leading zero, at most 16 digits;
         * a 16-digit value is compared as a string (same length, so byte
         * order is numeric order; COLLATE "C" keeps it so under any locale). */
        igw_out_printf(&o, "%s ~ '^[1-9][0-9]{0,15}$'", col);
        cond_add(cs, &o);
        igw_out_printf(&o, "(octet_length(%s) < 16 OR %s COLLATE \"C\" <= '%" PRId64 "')", col, col,
                       IGW_SAFE_MAX);
        cond_add(cs, &o);
        break;
    case IGW_FMT_BCP47:
        /* The decoder's RFC 5646 shape (igw_format_bcp47): 2-8 letters, then
         * "-" and 1-8 letters or digits, repeated. Bracket ranges are code
         * points in PostgreSQL regexes, whatever the database locale. */
        igw_out_printf(&o, "%s ~ '^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$'", col);
        cond_add(cs, &o);
        break;
    case IGW_FMT_IDENTIFIER:
        /* The decoder's rule (igw_format_identifier): no control character
         * (C0, DEL, C1), no wildcard, no leading or trailing Unicode white
         * space. Explicit code points, not [:cntrl:] or [:space:], whose
         * meaning above ASCII depends on the database locale. U+0000 cannot
         * occur in text. */
        igw_out_printf(&o, "%s !~ '[\\u0001-\\u001f\\u007f-\\u009f*?%%+#]'", col);
        cond_add(cs, &o);
        igw_out_printf(&o, "%s !~ '^[%s]|[%s]$'", col, SQL_SPACE, SQL_SPACE);
        cond_add(cs, &o);
        break;
    }
}

/* The CHECK conditions of column `c`, from its field rule and its machine,
 * on the value `col` (VALUE in a domain). */
static void column_conds(conds *cs, const igw_column *c, const char *col)
{
    const igw_type *t = c->from;
    if (t) {
        switch (t->kind) {
        case IGW_T_STRING:
            string_conds(cs, col, t);
            break;
        case IGW_T_INT: {
            igw_out o;
            igw_out_init(&o);
            igw_out_printf(&o, "%s BETWEEN %" PRId64 " AND %" PRId64, col, t->min, t->max);
            cond_add(cs, &o);
            break;
        }
        case IGW_T_ENUM:
            enum_cond(cs, col, t);
            break;
        case IGW_T_BOOL:
        case IGW_T_JSON:
        case IGW_T_OBJECT:
        case IGW_T_ARRAY:
        case IGW_T_REF: /* resolved by sema; never reached */
            break;
        }
    }
    if (c->machine_ref)
        machine_cond(cs, col, c->machine_ref);
}

static void conds_free(conds *cs)
{
    FOR(cs->v, char, s)
        free(s);
    free(cs->v.v);
    memset(cs, 0, sizeof *cs);
}

/* ---- domains -------------------------------------------------------------- */

/* A domain: the CHECK of the columns that share a rule. Columns deriving
 * from one named type share its domain (Ident -> ident); a column with an
 * inline rule, or a rule and a machine, gets <table>_<column>; a machine's
 * state column alone <machine>_state. */
typedef struct domain {
    char *name;
    const char *base;   /* SQL type */
    const char *doc;    /* the named type's, or NULL */
    const char *table;  /* where it was first used, for diagnostics */
    const char *column;
    conds cs;
    igw_loc loc;
} domain;

typedef struct domains {
    igw_vec v;    /* domain* in first-use order */
    igw_vec cols; /* const igw_column*: the columns typed by a domain */
    igw_vec of;   /* domain*: cols' domains, index for index */
} domains;

static bool conds_equal(const conds *a, const conds *b)
{
    bool same = a->v.n == b->v.n;
    for (int i = 0; same && i < a->v.n; i++)
        same = strcmp(IGW_VEC_AT(a->v, char, i), IGW_VEC_AT(b->v, char, i)) == 0;
    return same;
}

static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* "MsgType" -> "msg_type", "HTTPCode" -> "http_code": a word starts at a
 * capital after a small letter or digit, or at the last capital of a run
 * followed by a small letter. */
static char *snake_name(const char *name)
{
    igw_out o;
    igw_out_init(&o);
    for (const char *p = name; *p; p++) {
        char ch = *p;
        if (is_upper(ch)) {
            if (p != name && (is_lower_or_digit(p[-1]) || (is_upper(p[-1]) && p[1] >= 'a' && p[1] <= 'z')))
                igw_out_write(&o, "_", 1);
            ch = (char)(ch - 'A' + 'a');
        }
        igw_out_write(&o, &ch, 1);
    }
    return o.buf ? o.buf : igw_xstrdup("");
}

/* Gives column `c` of table `t` its domain, created on first use, when it
 * has conditions (otherwise its SQL type stands alone). */
static void add_column_domain(domains *ds, const igw_table *t, const igw_column *c)
{
    conds cs = {0};
    column_conds(&cs, c, "VALUE");
    if (cs.v.n == 0)
        return;
    bool shared = c->from && c->from->name && !c->machine_ref;
    char *name = shared                            ? snake_name(c->from->name)
                 : c->machine_ref && !c->from ? igw_xprintf("%s_state", c->machine_ref->name)
                                                   : igw_xprintf("%s_%s", t->name, c->name);
    domain *found = NULL;
    FOR(ds->v, domain, d)
        if (!found && strcmp(d->name, name) == 0 && strcmp(d->base, c->sqltype) == 0 && conds_equal(&d->cs, &cs))
            found = d;
    if (found) {
        free(name);
        conds_free(&cs);
    } else { /* a different rule under a taken name too: emit_domain reports the name used twice */
        found = igw_xcalloc(1, sizeof *found);
        *found = (domain){.name = name, .base = c->sqltype, .doc = shared ? c->from->doc : NULL, .table = t->name,
                          .column = c->name, .cs = cs, .loc = c->loc};
        igw_vec_push(&ds->v, found);
    }
    igw_vec_push(&ds->cols, (void *)c);
    igw_vec_push(&ds->of, found);
}

/* CREATE DOMAIN name AS base CONSTRAINT name_check CHECK (...). Returns
 * false when the name is unusable (already reported). `types` holds the
 * tables' names and the domains' so far: a domain is a type, as every
 * table's row type is, one namespace. */
static bool emit_domain(igw_out *o, const domain *d, nameset *types)
{
    bool ok = check_ident(d->loc, "domain name", d->name);
    if (ok && LISTED(pg_type_names, d->name)) {
        igw_diag_error(d->loc, "the rule of %s.%s becomes domain '%s', a PostgreSQL type or keyword", d->table,
                       d->column, d->name);
        ok = false;
    }
    if (ok && nameset_has(types, d->name)) {
        igw_diag_error(d->loc, "the rule of %s.%s becomes domain '%s', a name a table or another rule has", d->table,
                       d->column, d->name);
        ok = false;
    }
    char *check = igw_xprintf("%s_check", d->name);
    ok = ok && nameset_add(types, d->loc, d->name) && nameset_add(types, d->loc, check);
    free(check);
    if (d->doc) {
        igw_out_puts(o, "-- ");
        doc_text(o, d->doc);
        igw_out_puts(o, "\n");
    }
    igw_out_printf(o, "CREATE DOMAIN %s AS %s CONSTRAINT %s_check CHECK (", d->name, d->base, d->name);
    if (d->cs.v.n == 1 && !strchr(IGW_VEC_AT(d->cs.v, char, 0), '\n')) {
        igw_out_printf(o, "%s);\n", IGW_VEC_AT(d->cs.v, char, 0));
    } else {
        FOR(d->cs.v, char, s)
            igw_out_printf(o, "\n    %s%s", s_i ? "AND " : "", s);
        igw_out_puts(o, "\n);\n");
    }
    return ok;
}

static void domains_free(domains *ds)
{
    FOR(ds->v, domain, d) {
        free(d->name);
        conds_free(&d->cs);
        free(d);
    }
    free(ds->v.v);
    free(ds->cols.v);
    free(ds->of.v);
    memset(ds, 0, sizeof *ds);
}

/* ---- tables --------------------------------------------------------------- */

/* Writes "a, b, c". */
static void column_list(igw_out *o, const igw_vec *cols)
{
    for (int i = 0; i < cols->n; i++)
        igw_out_printf(o, "%s%s", i ? ", " : "", IGW_VEC_AT(*cols, const char, i));
}

/* Pads to `width` columns so names and types line up. */
static void pad(igw_out *o, size_t have, size_t width)
{
    for (; have < width; have++)
        igw_out_write(o, " ", 1);
}

/* The SQL type column `c` is declared with: its domain's name, or its own. */
static const char *column_type(const domains *ds, const igw_column *c)
{
    for (int i = 0; i < ds->cols.n; i++)
        if (ds->cols.v[i] == c)
            return IGW_VEC_AT(ds->of, domain, i)->name;
    return c->sqltype;
}

/* `row.a || '&' || row.b`: the primary key of OLD or NEW as a payload. */
static void key_payload(igw_out *o, const igw_table *t, const igw_index *pk, const char *row)
{
    FOR(pk->columns, const char, name) {
        const igw_column *c = NULL;
        FOR(t->columns, igw_column, x)
            if (strcmp(x->name, name) == 0)
                c = x;
        igw_out_printf(o, "%s%s.%s%s", name_i ? " || '&' || " : "", row, name,
                       c && strcmp(c->sqltype, "text") == 0 ? "" : "::text");
    }
}

/* A `notify` clause: a row trigger and its function. AFTER, so a rolled
 * back change notifies nobody (NOTIFY is delivered at commit anyway) and a
 * listener that refetches on the notification sees the committed row.
 * PostgreSQL merges identical notifications of one transaction, so an
 * UPDATE that keeps the key sends one. */
static bool emit_notify(igw_out *o, const igw_table *t, const igw_notify *n, nameset *functions)
{
    const igw_index *pk = NULL;
    FOR(t->indexes, igw_index, ix)
        if (ix->primary)
            pk = ix;
    bool ok = check_ident(n->loc, "channel name", n->channel);
    char *name = igw_xprintf("%s_notify_%s", t->name, n->channel);
    ok &= nameset_add(functions, n->loc, name);
    if (!pk || !ok) { /* no primary key: reported by sema */
        free(name);
        return false;
    }
    igw_out_puts(o, "-- ");
    if (n->doc) {
        doc_text(o, n->doc);
        igw_out_puts(o, "\n-- ");
    }
    igw_out_printf(o, "NOTIFY %s with the primary key of each row inserted, deleted or updated in (", n->channel);
    column_list(o, &n->columns);
    igw_out_puts(o, ") or its key.\n");
    igw_out_printf(o,
                   "CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                   "BEGIN\n"
                   "    IF TG_OP <> 'INSERT' THEN\n"
                   "        PERFORM pg_notify('%s', ",
                   name, n->channel);
    key_payload(o, t, pk, "OLD");
    igw_out_printf(o, ");\n"
                      "    END IF;\n"
                      "    IF TG_OP <> 'DELETE' THEN\n"
                      "        PERFORM pg_notify('%s', ",
                   n->channel);
    key_payload(o, t, pk, "NEW");
    igw_out_puts(o, ");\n"
                    "    END IF;\n"
                    "    RETURN NULL;\n"
                    "END\n"
                    "$$;\n");
    igw_out_printf(o, "CREATE TRIGGER %s AFTER INSERT OR DELETE OR UPDATE OF ", name);
    column_list(o, &n->columns);
    FOR(pk->columns, const char, c) {
        bool watched = false;
        FOR(n->columns, const char, w)
            watched |= strcmp(w, c) == 0;
        if (!watched)
            igw_out_printf(o, ", %s", c);
    }
    igw_out_printf(o, " ON %s\n    FOR EACH ROW EXECUTE FUNCTION %s();\n", t->name, name);
    free(name);
    return true;
}

/* One table: CREATE TABLE (columns, keys), its CREATE INDEXes and the
 * triggers of its `notify` clauses. Returns false when a derived name is
 * unusable (already reported). */
static bool emit_table(igw_out *o, const igw_table *t, const domains *ds, nameset *relations,
                       nameset *functions)
{
    bool ok = check_ident(t->loc, "table name", t->name);
    ok &= nameset_add(relations, t->loc, t->name);
    nameset constraints = {0};

    size_t wname = 0, wtype = 0;
    FOR(t->columns, igw_column, c) {
        ok &= check_ident(c->loc, "column name", c->name);
        if (strlen(c->name) > wname)
            wname = strlen(c->name);
        size_t type_len = strlen(column_type(ds, c));
        if (type_len > wtype)
            wtype = type_len;
    }

    /* Table constraints, in a fixed order: primary key, unique keys. */
    igw_vec lines = {0}; /* char*, without the separating comma */
    FOR(t->indexes, igw_index, ix) {
        if (!ix->unique || ix->where)
            continue; /* a partial unique index is an index (below), not a constraint */
        char *name = ix->primary ? igw_xprintf("%s_pkey", t->name) : index_name(t, ix, "key");
        /* A key constraint is also an index, a relation of the schema. */
        ok &= nameset_add(&constraints, ix->loc, name) && nameset_add(relations, ix->loc, name);
        igw_out l;
        igw_out_init(&l);
        igw_out_printf(&l, "CONSTRAINT %s %s (", name, ix->primary ? "PRIMARY KEY" : "UNIQUE");
        column_list(&l, &ix->columns);
        igw_out_puts(&l, ")");
        igw_vec_push(&lines, l.buf);
        free(name);
    }

    if (t->doc) {
        igw_out_puts(o, "-- ");
        doc_text(o, t->doc);
        igw_out_puts(o, "\n");
    }
    igw_out_printf(o, "CREATE TABLE %s (\n", t->name);
    FOR(t->columns, igw_column, c) {
        igw_out l;
        igw_out_init(&l);
        igw_out_printf(&l, "    %s", c->name);
        pad(&l, strlen(c->name), wname);
        const char *type = column_type(ds, c);
        igw_out_printf(&l, " %s", type);
        bool more = !c->nullable || c->deflt || c->identity || c->ref_table;
        if (more)
            pad(&l, strlen(type), wtype);
        if (!c->nullable)
            igw_out_puts(&l, " NOT NULL");
        if (c->identity) {
            igw_out_puts(&l, " GENERATED ALWAYS AS IDENTITY");
        } else if (c->deflt) {
            igw_out_puts(&l, " DEFAULT ");
            default_expr(&l, c);
        }
        if (c->ref_table) {
            char *name = igw_xprintf("%s_%s_fkey", t->name, c->name);
            ok &= nameset_add(&constraints, c->loc, name);
            igw_out_printf(&l, " CONSTRAINT %s REFERENCES %s (%s)", name, c->ref_table, c->ref_column);
            free(name);
        }
        bool last = c_i == t->columns.n - 1 && lines.n == 0;
        igw_out_printf(o, "%s%s", l.buf, last ? "" : ",");
        if (c->doc) {
            igw_out_puts(o, " -- ");
            doc_text(o, c->doc);
        }
        igw_out_puts(o, "\n");
        igw_out_free(&l);
    }
    FOR(lines, char, l) {
        igw_out_printf(o, "    %s%s\n", l, l_i == lines.n - 1 ? "" : ",");
        free(l);
    }
    free(lines.v);
    igw_out_puts(o, ");\n");

    FOR(t->indexes, igw_index, ix) {
        if (ix->unique && !ix->where)
            continue;
        char *name = index_name(t, ix, ix->unique ? "key" : "idx");
        ok &= nameset_add(relations, ix->loc, name);
        igw_out_printf(o, "CREATE %sINDEX %s ON %s (", ix->unique ? "UNIQUE " : "", name, t->name);
        column_list(o, &ix->columns);
        igw_out_puts(o, ")");
        if (ix->where_not_state) /* state names are identifiers: no quoting needed */
            igw_out_printf(o, " WHERE %s <> '%s'", ix->where, ix->where_not_state);
        else if (ix->where_state)
            igw_out_printf(o, " WHERE %s = '%s'", ix->where, ix->where_state);
        else if (ix->where)
            igw_out_printf(o, " WHERE %s IS %sNULL", ix->where, ix->where_not_null ? "NOT " : "");
        igw_out_puts(o, ";\n");
        free(name);
    }
    FOR(t->notifies, igw_notify, n)
        ok &= emit_notify(o, t, n, functions);
    nameset_free(&constraints);
    return ok;
}

int igw_emit_sql(const igw_schema *s, const char *gen_dir)
{
    igw_out o;
    igw_out_init(&o);
    igw_out_banner(&o, s, "--");
    nameset relations = {0}, types = {0}, functions = {0};
    domains ds = {0};
    FOR(s->tables, igw_table, t)
        FOR(t->columns, igw_column, c)
            add_column_domain(&ds, t, c);
    igw_out_printf(&o,
                   "--\n"
                   "-- PostgreSQL 15 DDL of every table of the schema, in declaration order%s.\n"
                   "-- migrations/ must build the same catalog: tests/sql/drift.sh compares them.\n",
                   ds.v.n ? ", after\n-- the domains their columns' rules became" : "");
    /* Tables first, so a clash is reported at the rule that made the domain;
     * the domains come first in the file. */
    igw_out tables;
    igw_out_init(&tables);
    bool ok = true;
    FOR(s->tables, igw_table, t) {
        igw_out_puts(&tables, "\n");
        ok &= emit_table(&tables, t, &ds, &relations, &functions);
        if (!nameset_has(&types, t->name)) /* a table named twice is reported once, by emit_table */
            (void)nameset_add(&types, t->loc, t->name);
    }
    if (ds.v.n)
        igw_out_puts(&o, "\n");
    FOR(ds.v, domain, d)
        ok &= emit_domain(&o, d, &types);
    if (tables.len)
        igw_out_write(&o, tables.buf, tables.len);
    igw_out_free(&tables);
    domains_free(&ds);
    nameset_free(&types);
    nameset_free(&relations);
    nameset_free(&functions);
    int rc = ok ? igw_out_save(&o, gen_dir, "sql/schema.sql") : -1;
    igw_out_free(&o);
    return rc;
}
