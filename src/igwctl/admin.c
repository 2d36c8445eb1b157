/* admin.c - igwctl admin commands: provisioning rows in PostgreSQL and
 * issuing login tokens. See admin.h and `igwctl help`.
 *
 * Rules: every query is parameterized (PQexecParams); each command runs in
 * one transaction (checks of referenced rows FOR SHARE/UPDATE, then the
 * change); `add` is idempotent: an existing row with the same data is
 * returned with "created":false, an existing row with different data is an
 * error. Errors print {"error":"..."} on stderr and exit 1; database errors
 * show the SQLSTATE only, never SQL text, server messages or the DSN. */
#include "admin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <openssl/crypto.h>

#include "arena.h"
#include "decode.h"
#include "devauth.h"
#include "json.h"
#include "jw.h"
#include "jwt.h"
#include "thingmodel.h"

const char igw_admin_usage[] =
    "  enterprise add --id N --name S\n"
    "  enterprise activate|deactivate --id N\n"
    "  user add --id N --enterprise N --name S\n"
    "  user activate|deactivate --id N   (a deactivated user's live sessions end: rightsRevoked)\n"
    "  product add --id P --enterprise N --name S --model FILE\n"
    "  device add --product P --device D [--owner USER] [--gateway] [--expiry UNIX_S]\n"
    "  device sign --product P --device D --secret S [--expiry UNIX_S] [--sha1]   (offline)\n"
    "  gateway bind --gateway-product P --gateway-device D --product P --device D\n"
    "  camera add --product P --device D --camera C [--name S]\n"
    "  grant --user N --product P --device D\n"
    "  group add --id G --enterprise N --owner N --name S [--members N,N,...]\n"
    "                                     (the stand-in IM back end's persistent group)\n"
    "  call start --user N --group G [--url URL]\n"
    "  call join|heartbeat|hangup|roster --user N --call C [--url URL]\n"
    "                                     (the stand-in IM's live calls, through igwd's\n"
    "                                     /api/v1/im-standin/ API as user N; URL: igwd,\n"
    "                                     default IGW_BASE_URL or http://127.0.0.1:8080)\n"
    "  token issue --user N [--ttl SECONDS]\n"
    "  token verify [--token T]           (else the token is read from stdin)\n"
    "\n"
    "  Database: --db DSN or IGW_PG_DSN. JWT key: --jwt-key-file FILE or\n"
    "  IGW_JWT_KEY_FILE (the file's bytes, one trailing newline removed, 32..1024).\n"
    "  Each prints one JSON object; errors: {\"error\":...} on stderr, exit 1.\n";

#define MODEL_MAX (1u << 20)
#define NAME_MAX_BYTES 128
#define TTL_DEFAULT 86400
#define TTL_MAX (366 * 86400)
#define DEVICE_TTL_DEFAULT (365 * 86400)

static PGconn *conn;

/* ---- errors and output ------------------------------------------------------ */

static void put_json(FILE *f, igw_jw *w)
{
    if (igw_jw_status(w) == 0) {
        fwrite(w->buf, 1, w->len, f);
        fputc('\n', f);
    }
    igw_jw_free(w);
}

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "error", 5);
    igw_jw_string(&w, msg, strlen(msg));
    igw_jw_object_end(&w);
    put_json(stderr, &w);
    if (conn)
        PQfinish(conn); /* an open transaction rolls back */
    conn = NULL;
    exit(1);
}

static void jstr(igw_jw *w, const char *k, const char *v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_string(w, v, strlen(v));
}

static void jbool(igw_jw *w, const char *k, bool v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_bool(w, v);
}

/* Prints the reply of every `add`: {key: value, ..., "created": bool} on
 * stdout; the key/value strings end with NULL. */
static void print_added(bool created, ...)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    va_list ap;
    va_start(ap, created);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
        jstr(&w, k, va_arg(ap, const char *));
    va_end(ap);
    jbool(&w, "created", created);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
}

/* ---- options ------------------------------------------------------------------ */

typedef struct opt {
    const char *name, *value; /* value NULL for a flag */
    bool used;
} opt;

static opt opts[32];
static int nopts;

static void parse_opts(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
            die("unexpected argument '%.64s'", a);
        if (nopts == (int)(sizeof opts / sizeof opts[0]))
            die("too many options");
        opt *o = &opts[nopts++];
        const char *eq = strchr(a, '=');
        if (eq) {
            o->name = strndup(a + 2, (size_t)(eq - a - 2));
            o->value = eq + 1;
        } else if (strcmp(a, "--gateway") == 0 || strcmp(a, "--sha1") == 0) { /* the flags */
            o->name = strdup(a + 2);
        } else {
            if (i + 1 >= argc)
                die("option %.64s needs a value", a);
            o->name = strdup(a + 2);
            o->value = argv[++i];
        }
        if (!o->name)
            die("out of memory");
        for (int k = 0; k < nopts - 1; k++)
            if (strcmp(opts[k].name, o->name) == 0)
                die("option --%.64s given twice", o->name);
    }
}

static void free_opts(void)
{
    for (int i = 0; i < nopts; i++)
        free((char *)opts[i].name);
    nopts = 0;
}

static opt *find_opt(const char *name)
{
    for (int i = 0; i < nopts; i++)
        if (strcmp(opts[i].name, name) == 0) {
            opts[i].used = true;
            return &opts[i];
        }
    return NULL;
}

static const char *opt_get(const char *name, bool required)
{
    opt *o = find_opt(name);
    if (!o) {
        if (required)
            die("missing option --%s", name);
        return NULL;
    }
    if (!o->value)
        die("option --%s needs a value", name);
    return o->value;
}

static bool flag_get(const char *name)
{
    opt *o = find_opt(name);
    if (o && o->value)
        die("option --%s takes no value", name);
    return o != NULL;
}

/* Fails on an option the command did not read. */
static void opts_done(void)
{
    for (int i = 0; i < nopts; i++)
        if (!opts[i].used)
            die("unknown option --%.64s", opts[i].name);
}

/* ---- value checks ---------------------------------------------------------------- */

static const char *id_arg(const char *name, bool required)
{
    const char *v = opt_get(name, required);
    if (v && !igw_format_canonical_id(v, strlen(v)))
        die("--%s must be a canonical id 1..9007199254740991", name);
    return v;
}

/* productID / deviceName: the schema's identifier rule and what device
 * credentials can carry (printable ASCII without & ; : + # /). */
static const char *ident_arg(const char *name, bool required)
{
    const char *v = opt_get(name, required);
    if (v) {
        size_t n = strlen(v);
        if (!igw_devauth_name_ok(v, n) || !igw_format_identifier(v, n))
            die("--%s must be 1..64 printable ASCII characters without & ; : + # / * ? %%", name);
    }
    return v;
}

static const char *camera_arg(const char *name)
{
    const char *v = opt_get(name, true);
    size_t n = strlen(v);
    if (n < 1 || n > 64 || !igw_json_utf8_valid(v, n) || !igw_format_identifier(v, n))
        die("--%s must be an identifier of 1..64 bytes", name);
    return v;
}

static const char *name_arg(const char *name, bool required)
{
    const char *v = opt_get(name, required);
    if (!v)
        return NULL;
    size_t n = strlen(v);
    if (n < 1 || n > NAME_MAX_BYTES || !igw_json_utf8_valid(v, n))
        die("--%s must be 1..%d bytes of UTF-8", name, NAME_MAX_BYTES);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            die("--%s must not contain control characters", name);
    return v;
}

/* A decimal integer lo..hi. */
static int64_t int_arg(const char *name, const char *v, int64_t lo, int64_t hi)
{
    if (!v || !igw_format_canonical_id(v, strlen(v)))
        die("--%s must be a positive decimal integer", name);
    errno = 0;
    long long x = strtoll(v, NULL, 10);
    if (errno || x < lo || x > hi)
        die("--%s must be within %lld..%lld", name, (long long)lo, (long long)hi);
    return x;
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---- files -------------------------------------------------------------------------- */

/* Reads at most cap bytes of a file (error when larger). */
static char *read_file(const char *what, const char *path, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open the %s file: %s", what, strerror(errno));
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        die("out of memory");
    }
    size_t n = fread(buf, 1, cap + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        die("cannot read the %s file", what);
    }
    if (n > cap) {
        free(buf);
        die("the %s file is larger than %zu bytes", what, cap);
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static unsigned char jwt_key[IGW_JWT_KEY_MAX + 2];
static size_t jwt_key_len;

static void load_jwt_key(void)
{
    const char *path = opt_get("jwt-key-file", false);
    if (!path)
        path = getenv("IGW_JWT_KEY_FILE");
    if (!path || !*path)
        die("no JWT key: give --jwt-key-file FILE or set IGW_JWT_KEY_FILE");
    size_t n;
    char *k = read_file("JWT key", path, IGW_JWT_KEY_MAX + 1, &n);
    if (n > 0 && k[n - 1] == '\n')
        n--;
    if (n < IGW_JWT_KEY_MIN || n > IGW_JWT_KEY_MAX) {
        OPENSSL_cleanse(k, n);
        free(k);
        die("the JWT key file must hold %d..%d bytes (one trailing newline is ignored)",
            IGW_JWT_KEY_MIN, IGW_JWT_KEY_MAX);
    }
    memcpy(jwt_key, k, n);
    jwt_key_len = n;
    OPENSSL_cleanse(k, n);
    free(k);
}

/* ---- database ------------------------------------------------------------------------ */

static void quiet_notice(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void db_connect(void)
{
    const char *dsn = opt_get("db", false);
    if (!dsn)
        dsn = getenv("IGW_PG_DSN");
    if (!dsn || !*dsn)
        die("no database: give --db DSN or set IGW_PG_DSN");
    conn = PQconnectdb(dsn);
    if (!conn || PQstatus(conn) != CONNECTION_OK)
        die("cannot connect to the database");
    PQsetNoticeProcessor(conn, quiet_notice, NULL);
}

/* Runs one parameterized statement; dies on any error (SQLSTATE only). */
static PGresult *db(const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    char state[6] = "?";
    const char *s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (s && strlen(s) == 5)
        memcpy(state, s, 6);
    PQclear(r);
    die("database error (SQLSTATE %s)", state);
}

static void db_cmd(const char *sql)
{
    PQclear(db(sql, 0, NULL));
}

#define P(...) ((const char *const[]){__VA_ARGS__})
#define NP(...) (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
#define Q(sql, ...) db(sql, NP(__VA_ARGS__), P(__VA_ARGS__))

/* Copies field (row 0) into buf; "" for NULL. */
static void field(PGresult *r, int col, char *buf, size_t cap)
{
    const char *v = PQgetisnull(r, 0, col) ? "" : PQgetvalue(r, 0, col);
    snprintf(buf, cap, "%s", v);
}

/* Enterprise of a row found by `sql` (one parameter), FOR SHARE; dies with
 * `missing` when there is none. */
static void lookup(const char *sql, const char *param, char *out, size_t cap, const char *missing)
{
    PGresult *r = Q(sql, param);
    if (PQntuples(r) != 1) {
        PQclear(r);
        die("%s", missing);
    }
    field(r, 0, out, cap);
    PQclear(r);
}

/* ---- commands --------------------------------------------------------------------------- */

static int enterprise_add(void)
{
    const char *id = id_arg("id", true), *name = name_arg("name", true);
    db_connect();
    opts_done();
    PGresult *r = Q("INSERT INTO enterprises (enterprise_id, name) VALUES ($1::bigint, $2) "
                    "ON CONFLICT (enterprise_id) DO NOTHING RETURNING enterprise_id",
                    id, name);
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (!created) {
        r = Q("SELECT name FROM enterprises WHERE enterprise_id = $1::bigint", id);
        bool same = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), name) == 0;
        PQclear(r);
        if (!same)
            die("enterprise %s exists with a different name", id);
    }
    print_added(created, "enterpriseId", id, "name", name, NULL);
    return 0;
}

/* Sets an enterprise's or a user's `active` (the igw_rights notification
 * reaches every node: their live sessions of a deactivated one end).
 * Prints {"<key>": id, "active": b, "changed": b}; an unknown id fails. */
static int set_active(const char *sql, const char *key, const char *what, bool active)
{
    const char *id = id_arg("id", true);
    db_connect();
    opts_done();
    PGresult *r = Q(sql, id, active ? "t" : "f");
    if (PQntuples(r) != 1)
        die("%s %s not found", what, id);
    bool changed = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    jstr(&w, key, id);
    jbool(&w, "active", active);
    jbool(&w, "changed", changed);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

/* changed: the row's active differed (the old row, read under the update's lock). */
#define SET_ACTIVE_SQL(table, key)                                                                                   \
    "UPDATE " table " t SET active = $2::boolean FROM (SELECT " key ", active FROM " table " WHERE " key            \
    " = $1::bigint FOR UPDATE) o WHERE t." key " = o." key " RETURNING o.active <> $2::boolean"

static int enterprise_activate(void)
{
    return set_active(SET_ACTIVE_SQL("enterprises", "enterprise_id"), "enterpriseId", "enterprise", true);
}

static int enterprise_deactivate(void)
{
    return set_active(SET_ACTIVE_SQL("enterprises", "enterprise_id"), "enterpriseId", "enterprise", false);
}

static int user_activate(void)
{
    return set_active(SET_ACTIVE_SQL("users", "user_id"), "userId", "user", true);
}

static int user_deactivate(void)
{
    return set_active(SET_ACTIVE_SQL("users", "user_id"), "userId", "user", false);
}

/* A persistent group of the stand-in IM back end (src/igwd/call/): the
 * owner and the members, all users of the enterprise. Idempotent: a second
 * run adds members that are missing and removes none. */
static int group_add(void)
{
    const char *id = camera_arg("id"), *ent = id_arg("enterprise", true), *owner = id_arg("owner", true);
    const char *name = name_arg("name", true), *list = opt_get("members", false);
    if (strlen(name) > 64)
        die("--name must be at most 64 bytes");
    /* {owner,members...} as a PostgreSQL array, each a canonical id */
    char arr[4096];
    size_t len = (size_t)snprintf(arr, sizeof arr, "{%s", owner);
    for (const char *p = list ? list : ""; *p;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (!igw_format_canonical_id(p, n) || len + n + 3 >= sizeof arr)
            die("--members must be canonical ids separated by commas");
        len += (size_t)snprintf(arr + len, sizeof arr - len, ",%.*s", (int)n, p);
        p += n + (c ? 1 : 0);
    }
    snprintf(arr + len, sizeof arr - len, "}");
    db_connect();
    opts_done();
    db_cmd("BEGIN");
    PGresult *r = Q("SELECT count(DISTINCT user_id) = (SELECT count(DISTINCT u) FROM unnest($2::bigint[]) u) "
                    "FROM users WHERE enterprise_id = $1::bigint AND user_id = ANY($2::bigint[])",
                    ent, arr);
    bool all = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!all)
        die("the owner and every member must be users of enterprise %s", ent);
    r = Q("INSERT INTO im_groups (group_id, enterprise_id, name, owner_user_id) "
          "VALUES ($1, $2::bigint, $3, $4::bigint) ON CONFLICT (group_id) DO NOTHING RETURNING group_id",
          id, ent, name, owner);
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (!created) {
        r = Q("SELECT enterprise_id::text, name, owner_user_id::text FROM im_groups WHERE group_id = $1", id);
        bool same = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), ent) == 0 &&
                    strcmp(PQgetvalue(r, 0, 1), name) == 0 && strcmp(PQgetvalue(r, 0, 2), owner) == 0;
        PQclear(r);
        if (!same)
            die("group %s exists with a different enterprise, name or owner", id);
    }
    PQclear(Q("INSERT INTO im_group_members (group_id, user_id) SELECT $1, u FROM unnest($2::bigint[]) u "
              "ON CONFLICT DO NOTHING",
              id, arr));
    db_cmd("COMMIT");
    r = Q("SELECT string_agg(user_id::text, ',' ORDER BY user_id) FROM im_group_members WHERE group_id = $1", id);
    char members[4096];
    snprintf(members, sizeof members, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    print_added(created, "groupId", id, "enterpriseId", ent, "ownerUserId", owner, "name", name, "members", members,
                NULL);
    return 0;
}

static int user_add(void)
{
    const char *id = id_arg("id", true), *ent = id_arg("enterprise", true);
    const char *name = name_arg("name", true);
    db_connect();
    opts_done();
    char buf[32], msg[96];
    db_cmd("BEGIN");
    snprintf(msg, sizeof msg, "enterprise %s not found", ent);
    lookup("SELECT enterprise_id FROM enterprises WHERE enterprise_id = $1::bigint FOR SHARE", ent,
           buf, sizeof buf, msg);
    PGresult *r = Q("INSERT INTO users (user_id, enterprise_id, name) VALUES ($1::bigint, $2::bigint, $3) "
                    "ON CONFLICT (user_id) DO NOTHING RETURNING user_id",
                    id, ent, name);
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (!created) {
        r = Q("SELECT enterprise_id::text, name FROM users WHERE user_id = $1::bigint", id);
        bool same = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), ent) == 0 &&
                    strcmp(PQgetvalue(r, 0, 1), name) == 0;
        PQclear(r);
        if (!same)
            die("user %s exists with a different enterprise or name", id);
    }
    db_cmd("COMMIT");
    print_added(created, "userId", id, "enterpriseId", ent, "name", name, NULL);
    return 0;
}

static int product_add(void)
{
    const char *id = ident_arg("id", true), *ent = id_arg("enterprise", true);
    const char *name = name_arg("name", true), *path = opt_get("model", true);
    size_t len;
    char *model = read_file("model", path, MODEL_MAX, &len);
    igw_arena a;
    igw_arena_init(&a, 0);
    igw_thingmodel *tm;
    igw_json err;
    if (igw_thingmodel_load(model, len, &a, &tm, &err) != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "model: %.180s at '%.180s'", err.reason ? err.reason : "invalid",
                 err.path);
        igw_arena_free(&a);
        free(model);
        die("%s", msg);
    }
    igw_arena_free(&a);
    db_connect();
    opts_done();
    char buf[32], msg[96];
    db_cmd("BEGIN");
    snprintf(msg, sizeof msg, "enterprise %s not found", ent);
    lookup("SELECT enterprise_id FROM enterprises WHERE enterprise_id = $1::bigint FOR SHARE", ent,
           buf, sizeof buf, msg);
    PGresult *r = Q("INSERT INTO products (product_id, enterprise_id, name, model) "
                    "VALUES ($1, $2::bigint, $3, $4::jsonb) "
                    "ON CONFLICT (product_id) DO NOTHING RETURNING model::text",
                    id, ent, name, model);
    bool created = PQntuples(r) == 1;
    if (!created) {
        PQclear(r);
        r = Q("SELECT model::text FROM products WHERE product_id = $1 AND enterprise_id = $2::bigint "
              "AND name = $3 AND model = $4::jsonb",
              id, ent, name, model);
        if (PQntuples(r) != 1) {
            PQclear(r);
            free(model);
            die("product %s exists with a different enterprise, name or model", id);
        }
    }
    free(model);
    db_cmd("COMMIT");
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    jstr(&w, "productID", id);
    jstr(&w, "enterpriseId", ent);
    jstr(&w, "name", name);
    igw_jw_key(&w, "model", 5);
    const char *stored = PQgetvalue(r, 0, 0);
    int bad = igw_jw_canonical(&w, stored, strlen(stored));
    PQclear(r);
    if (bad) {
        igw_jw_free(&w);
        die("the stored model is not valid JSON");
    }
    jbool(&w, "created", created);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

static int device_add(void)
{
    const char *prod = ident_arg("product", true), *dev = ident_arg("device", true);
    const char *owner = id_arg("owner", false);
    bool gateway = flag_get("gateway");
    const char *exp_s = opt_get("expiry", false);
    int64_t now = now_s();
    int64_t expiry = exp_s ? int_arg("expiry", exp_s, now + 1, IGW_DEVAUTH_EXPIRY_MAX)
                           : now + DEVICE_TTL_DEFAULT;
    db_connect();
    opts_done();
    char ent[32], owner_ent[32], msg[200];
    db_cmd("BEGIN");
    snprintf(msg, sizeof msg, "product %s not found", prod);
    lookup("SELECT enterprise_id::text FROM products WHERE product_id = $1 FOR SHARE", prod, ent,
           sizeof ent, msg);
    if (owner) {
        snprintf(msg, sizeof msg, "user %s not found", owner);
        lookup("SELECT enterprise_id::text FROM users WHERE user_id = $1::bigint FOR SHARE", owner,
               owner_ent, sizeof owner_ent, msg);
        if (strcmp(owner_ent, ent) != 0)
            die("user %s is not in the enterprise of product %s", owner, prod);
    }
    char secret[IGW_DEVAUTH_SECRET_B64_MAX + 1];
    if (igw_devauth_secret_new(secret, sizeof secret) != 0)
        die("cannot generate a device secret");
    PGresult *r = Q("INSERT INTO devices (product_id, device_name, enterprise_id, owner_user_id, secret, is_gateway) "
                    "VALUES ($1, $2, $3::bigint, $4::bigint, $5, $6::boolean) "
                    "ON CONFLICT (product_id, device_name) DO NOTHING RETURNING secret",
                    prod, dev, ent, owner, secret, gateway ? "true" : "false");
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (!created) {
        r = Q("SELECT secret FROM devices WHERE product_id = $1 AND device_name = $2 "
              "AND owner_user_id IS NOT DISTINCT FROM $3::bigint AND is_gateway = $4::boolean",
              prod, dev, owner, gateway ? "true" : "false");
        if (PQntuples(r) != 1) {
            PQclear(r);
            die("device %s/%s exists with a different owner or gateway flag", prod, dev);
        }
        field(r, 0, secret, sizeof secret);
        PQclear(r);
    }
    db_cmd("COMMIT");
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    char basic[IGW_DEVAUTH_BASIC_MAX + 1];
    if (igw_devauth_sign(prod, dev, secret, expiry, 0, user, sizeof user, pass, sizeof pass) != 0 ||
        igw_devauth_basic(user, pass, basic, sizeof basic) != 0)
        die("cannot sign the device credentials (stored secret unusable?)");
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    jstr(&w, "productID", prod);
    jstr(&w, "deviceName", dev);
    jstr(&w, "enterpriseId", ent);
    igw_jw_key(&w, "ownerUserId", 11);
    if (owner)
        igw_jw_string(&w, owner, strlen(owner));
    else
        igw_jw_null(&w);
    jbool(&w, "isGateway", gateway);
    jstr(&w, "secret", secret);
    jstr(&w, "username", user);
    jstr(&w, "password", pass);
    jstr(&w, "authorization", basic);
    igw_jw_key(&w, "expiresAt", 9);
    igw_jw_int(&w, expiry);
    jbool(&w, "created", created);
    igw_jw_object_end(&w);
    OPENSSL_cleanse(secret, sizeof secret);
    put_json(stdout, &w);
    return 0;
}

/* Offline: credentials from a known secret, with any expiry (also a past
 * one) and either signature form; for device makers and tests. */
static int device_sign(void)
{
    const char *prod = ident_arg("product", true), *dev = ident_arg("device", true);
    const char *secret = opt_get("secret", true);
    const char *exp_s = opt_get("expiry", false);
    bool sha1 = flag_get("sha1");
    int64_t expiry = exp_s ? int_arg("expiry", exp_s, 1, IGW_DEVAUTH_EXPIRY_MAX) : now_s() + DEVICE_TTL_DEFAULT;
    opts_done();
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    char basic[IGW_DEVAUTH_BASIC_MAX + 1];
    if (igw_devauth_sign(prod, dev, secret, expiry, sha1, user, sizeof user, pass, sizeof pass) != 0 ||
        igw_devauth_basic(user, pass, basic, sizeof basic) != 0)
        die("cannot sign: the secret must be base64 of 16..64 bytes");
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    jstr(&w, "productID", prod);
    jstr(&w, "deviceName", dev);
    jstr(&w, "username", user);
    jstr(&w, "password", pass);
    jstr(&w, "authorization", basic);
    igw_jw_key(&w, "expiresAt", 9);
    igw_jw_int(&w, expiry);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

static void target(igw_jw *w, const char *key, const char *prod, const char *dev)
{
    igw_jw_key(w, key, strlen(key));
    igw_jw_object_begin(w);
    jstr(w, "productID", prod);
    jstr(w, "deviceName", dev);
    igw_jw_object_end(w);
}

static int gateway_bind(void)
{
    const char *gp = ident_arg("gateway-product", true), *gd = ident_arg("gateway-device", true);
    const char *prod = ident_arg("product", true), *dev = ident_arg("device", true);
    db_connect();
    opts_done();
    if (strcmp(gp, prod) == 0 && strcmp(gd, dev) == 0)
        die("a device cannot be its own gateway");
    db_cmd("BEGIN");
    PGresult *r = Q("SELECT enterprise_id::text, is_gateway FROM devices "
                    "WHERE product_id = $1 AND device_name = $2 FOR SHARE",
                    gp, gd);
    if (PQntuples(r) != 1) {
        PQclear(r);
        die("gateway %s/%s not found", gp, gd);
    }
    char ent[32];
    field(r, 0, ent, sizeof ent);
    bool is_gw = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    PQclear(r);
    if (!is_gw)
        die("device %s/%s is not a gateway", gp, gd);
    r = Q("SELECT enterprise_id::text, is_gateway, gateway_product_id, gateway_device_name "
          "FROM devices WHERE product_id = $1 AND device_name = $2 FOR UPDATE",
          prod, dev);
    if (PQntuples(r) != 1) {
        PQclear(r);
        die("device %s/%s not found", prod, dev);
    }
    bool same_ent = strcmp(PQgetvalue(r, 0, 0), ent) == 0;
    bool sub_is_gw = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    bool bound = !PQgetisnull(r, 0, 2);
    bool bound_here = bound && strcmp(PQgetvalue(r, 0, 2), gp) == 0 &&
                      strcmp(PQgetvalue(r, 0, 3), gd) == 0;
    PQclear(r);
    if (!same_ent)
        die("device %s/%s is not in the gateway's enterprise", prod, dev);
    if (sub_is_gw)
        die("device %s/%s is a gateway and cannot be a sub-device", prod, dev);
    if (bound && !bound_here)
        die("device %s/%s is bound to another gateway", prod, dev);
    if (!bound)
        PQclear(Q("UPDATE devices SET gateway_product_id = $3, gateway_device_name = $4 "
                  "WHERE product_id = $1 AND device_name = $2",
                  prod, dev, gp, gd));
    db_cmd("COMMIT");
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    target(&w, "gateway", gp, gd);
    target(&w, "subDevice", prod, dev);
    jbool(&w, "created", !bound);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

static int camera_add(void)
{
    const char *prod = ident_arg("product", true), *dev = ident_arg("device", true);
    const char *cam = camera_arg("camera");
    const char *name = name_arg("name", false);
    if (!name)
        name = cam;
    db_connect();
    opts_done();
    db_cmd("BEGIN");
    PGresult *r = Q("SELECT 1 FROM devices WHERE product_id = $1 AND device_name = $2 FOR SHARE",
                    prod, dev);
    bool found = PQntuples(r) == 1;
    PQclear(r);
    if (!found)
        die("device %s/%s not found", prod, dev);
    r = Q("INSERT INTO cameras (product_id, device_name, camera_id, name) VALUES ($1, $2, $3, $4) "
          "ON CONFLICT (product_id, device_name, camera_id) DO NOTHING RETURNING camera_id",
          prod, dev, cam, name);
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (!created) {
        r = Q("SELECT 1 FROM cameras WHERE product_id = $1 AND device_name = $2 AND camera_id = $3 "
              "AND name = $4",
              prod, dev, cam, name);
        bool same = PQntuples(r) == 1;
        PQclear(r);
        if (!same)
            die("camera %s of %s/%s exists with a different name", cam, prod, dev);
    }
    db_cmd("COMMIT");
    print_added(created, "productID", prod, "deviceName", dev, "cameraId", cam, "name", name, NULL);
    return 0;
}

static int grant(void)
{
    const char *user = id_arg("user", true);
    const char *prod = ident_arg("product", true), *dev = ident_arg("device", true);
    db_connect();
    opts_done();
    char uent[32], msg[200];
    db_cmd("BEGIN");
    snprintf(msg, sizeof msg, "user %s not found", user);
    lookup("SELECT enterprise_id::text FROM users WHERE user_id = $1::bigint FOR SHARE", user,
           uent, sizeof uent, msg);
    PGresult *r = Q("SELECT enterprise_id::text FROM devices WHERE product_id = $1 AND device_name = $2 "
                    "FOR SHARE",
                    prod, dev);
    if (PQntuples(r) != 1) {
        PQclear(r);
        die("device %s/%s not found", prod, dev);
    }
    bool same = strcmp(PQgetvalue(r, 0, 0), uent) == 0;
    PQclear(r);
    if (!same)
        die("user %s is not in the enterprise of device %s/%s", user, prod, dev);
    r = Q("INSERT INTO device_grants (product_id, device_name, user_id) VALUES ($1, $2, $3::bigint) "
          "ON CONFLICT (product_id, device_name, user_id) DO NOTHING RETURNING user_id",
          prod, dev, user);
    bool created = PQntuples(r) == 1;
    PQclear(r);
    db_cmd("COMMIT");
    print_added(created, "userId", user, "productID", prod, "deviceName", dev, NULL);
    return 0;
}

static void claims_json(igw_jw *w, const igw_jwt_claims *c)
{
    char u[24], e[24];
    snprintf(u, sizeof u, "%lld", (long long)c->user_id);
    snprintf(e, sizeof e, "%lld", (long long)c->enterprise_id);
    jstr(w, "userId", u);
    jstr(w, "enterpriseId", e);
    igw_jw_key(w, "issuedAt", 8);
    igw_jw_int(w, c->iat);
    igw_jw_key(w, "expiresAt", 9);
    igw_jw_int(w, c->exp);
}

static int token_issue(void)
{
    const char *user = id_arg("user", true);
    const char *ttl_s = opt_get("ttl", false);
    int64_t ttl = ttl_s ? int_arg("ttl", ttl_s, 1, TTL_MAX) : TTL_DEFAULT;
    load_jwt_key();
    db_connect();
    opts_done();
    PGresult *r = Q("SELECT u.enterprise_id::text, u.active AND e.active FROM users u "
                    "JOIN enterprises e ON e.enterprise_id = u.enterprise_id WHERE u.user_id = $1::bigint",
                    user);
    if (PQntuples(r) != 1) {
        PQclear(r);
        die("user %s not found", user);
    }
    bool active = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    igw_jwt_claims c = {0, 0, now_s(), 0};
    c.user_id = strtoll(user, NULL, 10);
    c.enterprise_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    c.exp = c.iat + ttl;
    PQclear(r);
    if (!active)
        die("user %s or its enterprise is inactive", user);
    char tok[IGW_JWT_MAX + 1];
    int rc = igw_jwt_sign(jwt_key, jwt_key_len, &c, tok, sizeof tok);
    OPENSSL_cleanse(jwt_key, sizeof jwt_key);
    if (rc != IGW_JWT_OK)
        die("cannot sign the token (%s)", igw_jwt_strerror(rc));
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    jstr(&w, "token", tok);
    claims_json(&w, &c);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

/* ---- the stand-in IM's calls, through igwd ------------------------------------------ */

#define CALL_REPLY_MAX (1u << 20)

/* A login token of `user` for a few minutes (as token issue signs one). */
static void user_token(const char *user, char *tok, size_t cap)
{
    load_jwt_key();
    db_connect();
    PGresult *r = Q("SELECT u.enterprise_id::text, u.active AND e.active FROM users u "
                    "JOIN enterprises e ON e.enterprise_id = u.enterprise_id WHERE u.user_id = $1::bigint",
                    user);
    if (PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 1), "t") != 0) {
        PQclear(r);
        die("user %s not found or inactive", user);
    }
    igw_jwt_claims c = {0, 0, now_s(), 0};
    c.user_id = strtoll(user, NULL, 10);
    c.enterprise_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    c.exp = c.iat + 300;
    PQclear(r);
    int rc = igw_jwt_sign(jwt_key, jwt_key_len, &c, tok, cap);
    OPENSSL_cleanse(jwt_key, sizeof jwt_key);
    if (rc != IGW_JWT_OK)
        die("cannot sign the token (%s)", igw_jwt_strerror(rc));
}

/* POSTs body to igwd's path as the token's user (HTTP/1.1, one request,
 * Connection: close) and prints the reply's JSON; a reply other than 200
 * is the error. Only http:// URLs (igwd on this machine or its network). */
static int im_post(const char *path, const char *body)
{
    const char *url = opt_get("url", false);
    if (!url)
        url = getenv("IGW_BASE_URL");
    if (!url || !*url)
        url = "http://127.0.0.1:8080";
    if (strncmp(url, "http://", 7) != 0)
        die("--url must be http://HOST[:PORT]");
    char host[256], port[8] = "80";
    const char *h = url + 7, *end = h + strcspn(h, "/"), *colon = memchr(h, ':', (size_t)(end - h));
    size_t hl = (size_t)((colon ? colon : end) - h);
    if (!hl || hl >= sizeof host || (colon && ((size_t)(end - colon - 1) >= sizeof port || end == colon + 1)))
        die("--url must be http://HOST[:PORT]");
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (colon) {
        memcpy(port, colon + 1, (size_t)(end - colon - 1));
        port[end - colon - 1] = '\0';
    }
    char tok[IGW_JWT_MAX + 1];
    user_token(opt_get("user", true), tok, sizeof tok);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        die("cannot resolve %s", host);
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        die("cannot connect to %s:%s (is igwd running?)", host, port);
    struct timeval tv = {.tv_sec = 10};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv); /* the spec's client timeout */
    char head[IGW_JWT_MAX + 512];
    int n = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     path, host, tok, strlen(body));
    OPENSSL_cleanse(tok, sizeof tok);
    if (n < 0 || (size_t)n >= sizeof head)
        die("request too long");
    for (size_t k = 0, len = (size_t)n; k < len;) { /* the head, then the body */
        ssize_t w = write(fd, head + k, len - k);
        if (w <= 0)
            die("cannot send to igwd: %s", strerror(errno));
        k += (size_t)w;
    }
    for (size_t k = 0, len = strlen(body); k < len;) {
        ssize_t w = write(fd, body + k, len - k);
        if (w <= 0)
            die("cannot send to igwd: %s", strerror(errno));
        k += (size_t)w;
    }
    char *reply = malloc(CALL_REPLY_MAX + 1);
    if (!reply)
        die("out of memory");
    size_t got = 0;
    for (ssize_t r; got < CALL_REPLY_MAX && (r = read(fd, reply + got, CALL_REPLY_MAX - got)) != 0;) {
        if (r < 0)
            die("no answer from igwd: %s", strerror(errno));
        got += (size_t)r;
    }
    close(fd);
    reply[got] = '\0';
    int status = 0;
    char *json = strstr(reply, "\r\n\r\n");
    if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1 || !json)
        die("not an HTTP answer from %s:%s", host, port);
    json += 4;
    json[strcspn(json, "\r\n")] = '\0';
    if (status != 200) {
        fprintf(stderr, "%s\n", json);
        free(reply);
        exit(1);
    }
    printf("%s\n", json);
    free(reply);
    return 0;
}

/* {"<key>":"<value>"} for the stand-in's bodies (value: an identifier). */
static int call_op(const char *path, const char *key, const char *value)
{
    char body[512];
    if (strlen(value) > 128 || strpbrk(value, "\"\\"))
        die("--%s must be an identifier", strcmp(key, "groupId") ? "call" : "group");
    snprintf(body, sizeof body, "{\"%s\":\"%s\"}", key, value);
    opt_get("user", true);
    opt_get("url", false);
    opts_done();
    return im_post(path, body);
}

static int call_start(void)
{
    return call_op("/api/v1/im-standin/calls/start", "groupId", opt_get("group", true));
}
static int call_join(void)
{
    return call_op("/api/v1/im-standin/calls/join", "callId", opt_get("call", true));
}
static int call_heartbeat(void)
{
    return call_op("/api/v1/im-standin/calls/heartbeat", "callId", opt_get("call", true));
}
static int call_hangup(void)
{
    return call_op("/api/v1/im-standin/calls/hangup", "callId", opt_get("call", true));
}
static int call_roster(void)
{
    return call_op("/api/v1/im-standin/calls/roster", "callId", opt_get("call", true));
}

static int token_verify(void)
{
    const char *tok = opt_get("token", false);
    load_jwt_key();
    opts_done();
    char buf[IGW_JWT_MAX + 2];
    size_t len;
    if (tok) {
        len = strlen(tok);
    } else {
        len = fread(buf, 1, sizeof buf - 1, stdin);
        buf[len] = '\0';
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        tok = buf;
    }
    igw_jwt_claims c;
    int rc = igw_jwt_verify(tok, len, jwt_key, jwt_key_len, now_s(), &c);
    OPENSSL_cleanse(jwt_key, sizeof jwt_key);
    if (rc != IGW_JWT_OK)
        die("token refused (%s)", igw_jwt_strerror(rc));
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    claims_json(&w, &c);
    igw_jw_object_end(&w);
    put_json(stdout, &w);
    return 0;
}

typedef struct command {
    const char *noun, *verb; /* verb NULL: the noun alone */
    int (*fn)(void);
} command;

static const command commands[] = {
    {"enterprise", "add", enterprise_add}, {"user", "add", user_add},
    {"enterprise", "activate", enterprise_activate}, {"enterprise", "deactivate", enterprise_deactivate},
    {"user", "activate", user_activate},   {"user", "deactivate", user_deactivate},
    {"product", "add", product_add},       {"device", "add", device_add},
    {"device", "sign", device_sign},
    {"gateway", "bind", gateway_bind},     {"camera", "add", camera_add},
    {"grant", NULL, grant},                {"group", "add", group_add},
    {"token", "issue", token_issue},
    {"call", "start", call_start},         {"call", "join", call_join},
    {"call", "heartbeat", call_heartbeat}, {"call", "hangup", call_hangup},
    {"call", "roster", call_roster},
    {"token", "verify", token_verify},
};

int igw_admin_main(int argc, char **argv)
{
    bool noun_known = false;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        if (strcmp(argv[0], c->noun) != 0)
            continue;
        noun_known = true;
        int skip = 1;
        if (c->verb) {
            if (argc < 2 || strcmp(argv[1], c->verb) != 0)
                continue;
            skip = 2;
        }
        parse_opts(argc - skip, argv + skip);
        int rc = c->fn();
        if (conn)
            PQfinish(conn);
        conn = NULL;
        free_opts();
        return rc;
    }
    if (!noun_known)
        return -1;
    die("unknown subcommand '%.32s %.32s' (see igwctl help)", argv[0], argc > 1 ? argv[1] : "");
}
