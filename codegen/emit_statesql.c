/* emit_statesql.c - generated/igwd/state_sql.h: the interaction.state events
 * of a statement that changes sessions, built in SQL from the schema.
 *
 * igwd writes a session's state change and its event in one statement, so
 * the event's canonical text is concatenated by PostgreSQL, not encoded by
 * C. Writing that concatenation from the event's type keeps its bytes the
 * generated encoder's: the fields in schema order, strings through to_json
 * (which escapes what igw_jw does: \" \\ \b \f \n \r \t, other C0 as \u00xx,
 * the rest raw), optional fields only when present. The macro's input is a
 * CTE `upd` of fixed columns, so every field of the event must map to one:
 * a field the map lacks (or a mapped one the schema dropped) stops the
 * generator, and the statement's interface changes with the schema on
 * purpose, never silently. Written only when the schema declares the
 * event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

#define STATE_EVENT "interaction.state"

/* Where each field of the event comes from: a column of CTE `go` (upd's
 * row and the token the macro derives). A single-valued enum (the
 * envelope's method) needs none: it is its value. */
static const struct {
    const char *path, *column;
} field_map[] = {
    {"msgToken", "go.token"},         {"sessionId", "go.sid"},         {"eventSeq", "go.seq"},
    {"data.state", "go.state"},       {"data.playback", "go.playback"}, {"data.positionMs", "go.pos"},
    {"data.reason", "go.reason"},     {"data.inviteToken", "go.invite"}, {"data.cameraId", "go.camera"},
    {"data.target.productID", "go.pid"}, {"data.target.deviceName", "go.dn"}, {"data.mediaRevision", "go.rev"},
};
#define NMAP (sizeof field_map / sizeof field_map[0])

typedef struct ctx {
    const igw_event *ev;
    bool used[NMAP];
    int errors;
} ctx;

static const char *column_of(ctx *c, const char *path)
{
    for (size_t i = 0; i < NMAP; i++)
        if (!strcmp(field_map[i].path, path)) {
            c->used[i] = true;
            return field_map[i].column;
        }
    return NULL;
}

/* Appends `text` as the inside of an SQL string literal ('' for '). */
static void sql_text(igw_out *o, const char *text)
{
    for (const char *p = text; *p; p++)
        igw_out_write(o, *p == '\'' ? "''" : p, *p == '\'' ? 2 : 1);
}

/* The JSON text of `s` (a constant), as an SQL literal's inside. */
static void sql_json_string(igw_out *o, const char *s)
{
    igw_out j;
    igw_out_init(&j);
    igw_out_json_string(&j, s);
    sql_text(o, j.buf);
    igw_out_free(&j);
}

static void object_expr(ctx *c, igw_out *o, const igw_type *t, const char *prefix);

/* The SQL expression of field f's value, from `col` (NULL: its constant). */
static void value_expr(ctx *c, igw_out *o, const igw_field *f, const char *path, const char *col)
{
    const igw_type *r = igw_type_resolve(f->type);
    switch (r->kind) {
    case IGW_T_STRING:
        igw_out_printf(o, "to_json(%s::text)::text", col);
        return;
    case IGW_T_ENUM:
        if (!col) {
            igw_out_puts(o, "'");
            sql_json_string(o, IGW_VEC_AT(r->values, const char, 0));
            igw_out_puts(o, "'");
        } else {
            igw_out_printf(o, "to_json(%s::text)::text", col); /* its wire name */
        }
        return;
    case IGW_T_INT:
        igw_out_printf(o, "%s::bigint::text", col);
        return;
    case IGW_T_BOOL:
        igw_out_printf(o, "CASE WHEN %s THEN 'true' ELSE 'false' END", col);
        return;
    case IGW_T_OBJECT:
        object_expr(c, o, r, path);
        return;
    default:
        igw_diag_error(f->loc, "%s: field %s: only strings, ints, bools, enums and objects are built in SQL",
                       STATE_EVENT, path);
        c->errors++;
        igw_out_puts(o, "NULL");
        return;
    }
}

/* '{' || the fields in schema order, each `,"key":value` (the first without
 * its comma when it is required; otherwise ltrim drops the first comma)
 * || '}': the bytes igw_jw writes. */
static void object_expr(ctx *c, igw_out *o, const igw_type *t, const char *prefix)
{
    const igw_field *first = t->fields.n ? IGW_VEC_AT(t->fields, igw_field, 0) : NULL;
    bool trim = first && first->optional;
    igw_out_puts(o, trim ? "'{' || ltrim(''" : "'{'");
    FOR(t->fields, igw_field, f) {
        const char *path = prefix ? igw_sprintf("%s.%s", prefix, f->name) : f->name;
        if (f->sw) {
            igw_diag_error(f->loc, "%s: field %s: a discriminated field is not built in SQL", STATE_EVENT, path);
            c->errors++;
            continue;
        }
        const igw_type *r = igw_type_resolve(f->type);
        bool constant = r->kind == IGW_T_ENUM && r->values.n == 1 && !f->optional;
        const char *col = column_of(c, path);
        if (!col && !constant && r->kind != IGW_T_OBJECT) {
            igw_diag_error(f->loc, "%s: field %s has no column in the statement's CTE upd (emit_statesql.c)",
                           STATE_EVENT, path);
            c->errors++;
            continue;
        }
        /* An optional object is present when its first required field's
         * column is not NULL. */
        const char *present = col;
        if (r->kind == IGW_T_OBJECT && f->optional) {
            present = NULL;
            FOR(r->fields, igw_field, sub)
                if (!present && !sub->optional) {
                    const char *sp = igw_sprintf("%s.%s", path, sub->name);
                    for (size_t i = 0; i < NMAP; i++)
                        if (!strcmp(field_map[i].path, sp))
                            present = field_map[i].column;
                }
            if (!present) {
                igw_diag_error(f->loc, "%s: field %s: an optional object needs a required field with a column",
                               STATE_EVENT, path);
                c->errors++;
                continue;
            }
        }
        bool comma = f_i > 0 || trim;
        igw_out_puts(o, "\n        || ");
        if (f->optional)
            igw_out_printf(o, "CASE WHEN %s IS NULL THEN '' ELSE ", present);
        igw_out_printf(o, "'%s", comma ? "," : "");
        sql_json_string(o, f->name);
        igw_out_puts(o, ":' || ");
        value_expr(c, o, f, path, constant ? NULL : col);
        if (f->optional)
            igw_out_puts(o, " END");
    }
    igw_out_puts(o, trim ? ", ',') || '}'" : " || '}'");
}

/* A column the statement writes must be the table's. */
static void need_column(ctx *c, const igw_schema *s, const char *table, const char *column)
{
    const igw_table *t = igw_schema_table(s, table);
    if (t)
        FOR(t->columns, igw_column, col)
            if (!strcmp(col->name, column))
                return;
    igw_diag_error(c->ev->loc, "%s: the statement writes %s.%s, which the schema's tables lack", STATE_EVENT, table,
                   column);
    c->errors++;
}

/* A new delivery's state: the creation target of deliveries.state's machine. */
static const char *delivery_first_state(ctx *c, const igw_schema *s)
{
    const igw_table *t = igw_schema_table(s, "deliveries");
    if (t)
        FOR(t->columns, igw_column, col) {
            if (strcmp(col->name, "state") || !col->machine_ref)
                continue;
            FOR(col->machine_ref->transitions, igw_transition, tr)
                if (!tr->reject)
                    for (int k = 0; k < tr->from_idx.n; k++)
                        if ((intptr_t)tr->from_idx.v[k] == -1)
                            return tr->to;
        }
    igw_diag_error(c->ev->loc, "%s: no machine state for a new delivery (deliveries.state, `on ...: none -> ...`)",
                   STATE_EVENT);
    c->errors++;
    return "pending";
}

/* Writes one SQL line as a C string literal line of the macro. */
static void macro_line(igw_out *h, const char *sql, size_t n)
{
    igw_out_puts(h, "    ");
    igw_out_c_bytes(h, sql, n);
    igw_out_puts(h, " \\\n");
}

int igw_emit_state_sql(const igw_schema *s, const char *gen_dir)
{
    const igw_event *ev = NULL;
    FOR(s->events, igw_event, e)
        if (!strcmp(e->name, STATE_EVENT))
            ev = e;
    if (!ev)
        return 0;
    ctx c = {.ev = ev};
    const igw_type *t = igw_type_resolve(ev->type);
    igw_out body;
    igw_out_init(&body);
    if (t->kind != IGW_T_OBJECT) {
        igw_diag_error(ev->loc, "%s: the event's type must be an object", STATE_EVENT);
        c.errors++;
    } else {
        object_expr(&c, &body, t, NULL);
    }
    for (size_t i = 0; i < NMAP; i++)
        if (!c.used[i]) {
            igw_diag_error(ev->loc, "%s: the statement's CTE maps %s, a field the event no longer has", STATE_EVENT,
                           field_map[i].path);
            c.errors++;
        }
    static const char *const ev_cols[] = {"event_id", "session_id", "msg_token", "event_seq", "body", "body_text"};
    static const char *const dl_cols[] = {"delivery_id", "event_id", "endpoint_id", "session_id", "watermark",
                                          "state", "expires_at_ms"};
    for (size_t i = 0; i < sizeof ev_cols / sizeof ev_cols[0]; i++)
        need_column(&c, s, "events", ev_cols[i]);
    for (size_t i = 0; i < sizeof dl_cols / sizeof dl_cols[0]; i++)
        need_column(&c, s, "deliveries", dl_cols[i]);
    need_column(&c, s, "endpoints", "endpoint_id");
    need_column(&c, s, "endpoints", "expires_at_ms");
    const char *pending = delivery_first_state(&c, s);
    if (c.errors) {
        igw_out_free(&body);
        return -1;
    }

    /* The statement's SQL, one C literal per line; DID and the channel are
     * the caller's (macro argument, event/outbox.h). */
    igw_out sql;
    igw_out_init(&sql);
    /* go: upd's columns the map names (token is derived below). */
    igw_out_puts(&sql, "go AS MATERIALIZED (SELECT u.ep");
    for (size_t i = 0; i < NMAP; i++)
        if (strcmp(field_map[i].column, "go.token"))
            igw_out_printf(&sql, ", u.%s", field_map[i].column + 3);
    igw_out_puts(&sql, ", p.expires_at_ms AS exp, \n"
        "        nextval(pg_get_serial_sequence('events', 'event_id')) AS event_id, u.sid || '.' || u.seq AS token, \n"
        "        `DID` AS did \n"
        "    FROM upd u JOIN endpoints p ON p.endpoint_id = u.ep \n"
        "    WHERE p.expires_at_ms > floor(extract(epoch FROM now()) * 1000)::bigint), \n"
        "b AS MATERIALIZED (SELECT go.*, ");
    igw_out_write(&sql, body.buf, body.len);
    igw_out_printf(&sql,
        " \n        AS body FROM go), \n"
        "ev AS (INSERT INTO events (event_id, session_id, msg_token, event_seq, body, body_text) OVERRIDING SYSTEM VALUE \n"
        "       SELECT b.event_id, b.sid, b.token, b.seq, b.body::jsonb, b.body FROM b RETURNING 1), \n"
        "dl AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, expires_at_ms) \n"
        "       SELECT b.did, b.event_id, b.ep, b.sid, b.event_id, '%s', b.exp FROM b RETURNING 1), \n"
        "ntf AS (SELECT pg_notify('`IGW_OUTBOX_CHANNEL`', e.ep) FROM (SELECT DISTINCT ep FROM b) e) \n",
        pending);
    igw_out_free(&body);

    igw_out h;
    igw_out_init(&h);
    igw_out_banner(&h, s, "//");
    igw_out_puts(&h,
        "/* state_sql.h - the " STATE_EVENT " events of a statement that changes\n"
        " * sessions, built by PostgreSQL from the schema's event type (");
    igw_out_puts(&h, t->name ? t->name : "?");
    igw_out_puts(&h, "), so\n"
        " * their canonical text is the generated encoder's, byte for byte: fields in\n"
        " * schema order, strings through to_json, optional fields only when present.\n"
        " *\n"
        " * IGW_SQL_STATE_EVENTS(DID) follows a CTE `upd` returning, per changed\n"
        " * session, sid (text), ep (its endpoint), seq (its new event_seq, bigint),\n"
        " * state, playback and pos (a playback's phase and position; NULL: none),\n"
        " * reason (NULL: none), and invite, camera, pid and dn (a ringing event's\n"
        " * inviteToken, cameraId and target; NULL: none), and rev (an established\n"
        " * event's mediaRevision, bigint; NULL: none). For those whose endpoint is live it inserts the\n"
        " * event, msgToken \"<sid>.<seq>\", and its delivery with deliveryId DID (an\n"
        " * SQL expression, text), and notifies the endpoints; CTEs go, b (b.body:\n"
        " * the event's text), ev, dl and ntf can be counted after, and ntf must\n"
        " * be: it modifies nothing, so PostgreSQL runs it only when the statement\n"
        " * reads it (unread, no endpoint hears of its events). Event ids are\n"
        " * drawn first so each delivery knows its event and watermark. The includer\n"
        " * provides IGW_OUTBOX_CHANNEL (event/outbox.h). */\n"
        "#ifndef IGW_GENERATED_STATE_SQL_H\n#define IGW_GENERATED_STATE_SQL_H\n\n"
        "#define IGW_SQL_STATE_EVENTS(DID) \\\n");
    /* Each line a literal; `NAME` splices the macro argument or a name. */
    for (const char *p = sql.buf, *end = sql.buf + sql.len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        const char *mark = memchr(p, '`', (size_t)(stop - p));
        if (mark) {
            const char *close = memchr(mark + 1, '`', (size_t)(stop - mark - 1));
            igw_out_puts(&h, "    ");
            igw_out_c_bytes(&h, p, (size_t)(mark - p));
            igw_out_printf(&h, " %.*s ", (int)(close - mark - 1), mark + 1);
            igw_out_c_bytes(&h, close + 1, (size_t)(stop - close - 1));
            igw_out_puts(&h, " \\\n");
        } else {
            macro_line(&h, p, (size_t)(stop - p));
        }
        p = nl ? nl + 1 : end;
    }
    igw_out_puts(&h, "    \"\"\n\n#endif\n");
    igw_out_free(&sql);
    int rc = igw_out_save(&h, gen_dir, "igwd/state_sql.h");
    igw_out_free(&h);
    return rc ? -1 : 0;
}
