/* presence.c - device presence from the broker; see presence.h. */
#include "edge/presence.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core/log.h"
#include "edge/decide.h"
#include "event/devicemsg.h"
#include "event/outbox.h"
#include "jw.h"
#include "protocol.h"

#define LOG_EVERY 1000 /* malformed facts and failures: the first and every 1000th are logged */

/* The fact applies only when newer than the stored one ((boot, seq), NULL:
 * none yet); the primary key bounds it to one row, and a device that does
 * not exist matches none. A camera that came online without any capability
 * report stored (it reported while no platform listened) is asked for one
 * (the `get` downlink): its reports must not depend on who was subscribed.
 * Parameters by name: *_P_X is $(X + 1). */
enum { APPLY_P_PID, APPLY_P_DN, APPLY_P_ONLINE, APPLY_P_BOOT, APPLY_P_SEQ, APPLY_P_AT, APPLY_NP };
enum { APPLY_C_PID, APPLY_C_DN, APPLY_C_ASK };
static const igw_db_stmt st_apply = {
    "presence_apply",
    "UPDATE devices d SET online = $3::boolean, presence_at = to_timestamp($6::double precision / 1000),"
    " presence_boot = $4::bigint, presence_seq = $5::bigint"
    " WHERE product_id = $1 AND device_name = $2"
    " AND (presence_boot IS NULL OR (presence_boot, presence_seq) < ($4::bigint, $5::bigint))"
    " RETURNING d.product_id, d.device_name, d.online"
    " AND EXISTS (SELECT 1 FROM cameras c WHERE c.product_id = d.product_id AND c.device_name = d.device_name)"
    " AND NOT EXISTS (SELECT 1 FROM " IGW_SQL_CAPABILITY_REPORTS("m", "d.product_id", "d.device_name") ")",
    APPLY_NP,
};

/* A broker boot $1 ended every connection of the older boots: each device
 * still of an older boot is set offline at ($1, 0) (so no fact of an older
 * boot applies after), presence_at the new boot's start for those that
 * were online. A batch at a time, by the partial index on presence_boot;
 * FOR UPDATE so that a fact applied meanwhile is seen (and skipped when it
 * is of the new boot), and two sweepers set each device once. */
enum { SWEEP_P_BOOT, SWEEP_NP };
enum { SWEEP_C_SWEPT, SWEEP_C_ONLINE };
static const igw_db_stmt st_sweep = {
    "presence_sweep",
    "WITH s AS (SELECT product_id, device_name, online FROM devices WHERE presence_boot < $1::bigint"
    " LIMIT 1000 FOR UPDATE),"
    " u AS (UPDATE devices d SET online = false, presence_boot = $1::bigint, presence_seq = 0,"
    " presence_at = CASE WHEN s.online THEN to_timestamp($1::double precision / 1000) ELSE d.presence_at END"
    " FROM s WHERE d.product_id = s.product_id AND d.device_name = s.device_name RETURNING s.online)"
    " SELECT count(*), count(*) FILTER (WHERE online) FROM u",
    SWEEP_NP,
};
_Static_assert(IGW_PRESENCE_SWEEP_BATCH == 1000, "st_sweep's LIMIT");

struct igw_presence {
    igw_db *db;
    igw_presence_stats *stats;
    unsigned inflight;   /* statements sent, unanswered */
    int64_t sweep_boot;  /* the boot being swept for (0: no sweep) */
    int64_t sweep_sent;  /* the boot of the batch in flight */
    igw_engine *const *engine; /* told of devices gone offline (NULL: none) */
    _Atomic(igw_mqtt *) *mqtt; /* asks cameras for their capability (NULL: none) */
};

/* ---- statements ------------------------------------------------------------------------ */

static void count_log(atomic_uint_fast64_t *c, const char *fmt, const char *a, const char *b)
{
    uint64_t n = atomic_fetch_add(c, 1) + 1;
    if (n == 1 || n % LOG_EVERY == 0)
        igw_log(IGW_LOG_WARN, NULL, fmt, a, b, (unsigned long long)n);
}

/* The protocol's `media capability get` downlink to a camera. */
static void ask_capability(igw_presence *p, const char *product_id, const char *device_name)
{
    const igw_proto_down *d = &igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_capability_get];
    igw_mqtt *m = p->mqtt ? atomic_load(p->mqtt) : NULL;
    char token[32];
    if (!m || igw_outbox_new_id(token, sizeof token) != 0)
        return;
    igw_jw w;
    igw_jw_init(&w);
    igw_MediaCapabilityGet g = {.has = IGW_MediaCapabilityGet__REQUIRED, .method = igw_str_of(d->method),
                                .msgToken = igw_str_of(token)};
    igw_encode_MediaCapabilityGet(&w, &g);
    if (igw_jw_status(&w) || igw_mqtt_publish_down(m, d, product_id, device_name, w.buf, w.len) != 0)
        igw_log(IGW_LOG_WARN, NULL, "presence: %s/%s: capability not asked for", product_id, device_name);
    else
        igw_log(IGW_LOG_INFO, NULL, "presence: %s/%s online without a capability report: asked for one", product_id,
                device_name);
    igw_jw_free(&w);
}

static void on_applied(void *arg, const PGresult *res, const char *err)
{
    igw_presence *p = arg;
    p->inflight--;
    if (!res) {
        count_log(&p->stats->failed, "presence: a fact not stored: %s%s (%llu such so far)", err, "");
        return;
    }
    const char *n = PQcmdTuples((PGresult *)res);
    atomic_fetch_add(n && strcmp(n, "1") == 0 ? &p->stats->applied : &p->stats->ignored, 1);
    if (PQntuples(res) == 1 && igw_db_true(res, 0, APPLY_C_ASK))
        ask_capability(p, PQgetvalue(res, 0, APPLY_C_PID), PQgetvalue(res, 0, APPLY_C_DN));
}

static void sweep_next(igw_presence *p);

static void on_swept(void *arg, const PGresult *res, const char *err)
{
    igw_presence *p = arg;
    p->inflight--;
    if (!res || PQntuples(res) != 1) {
        count_log(&p->stats->failed, "presence: the sweep of older broker boots failed: %s%s (%llu such so far)",
                  err ? err : "no row", "");
        p->sweep_boot = 0; /* the next newer boot sweeps again; this one's devices stay as they are */
        return;
    }
    long long n = strtoll(PQgetvalue(res, 0, SWEEP_C_SWEPT), NULL, 10),
              online = strtoll(PQgetvalue(res, 0, SWEEP_C_ONLINE), NULL, 10);
    if (online > 0)
        atomic_fetch_add(&p->stats->swept, (uint64_t)online);
    if (igw_presence_sweep_more(n, IGW_PRESENCE_SWEEP_BATCH, p->sweep_boot, p->sweep_sent)) {
        sweep_next(p); /* more behind, or a newer boot arrived meanwhile: at once */
        return;
    }
    igw_log(IGW_LOG_INFO, NULL, "presence: broker boot %" PRId64 ": the devices of older boots are offline",
            p->sweep_boot);
    p->sweep_boot = 0;
}

static void sweep_next(igw_presence *p)
{
    char boot[24];
    const char *v[SWEEP_NP] = {[SWEEP_P_BOOT] = boot};
    snprintf(boot, sizeof boot, "%" PRId64, p->sweep_boot);
    p->sweep_sent = p->sweep_boot;
    if (igw_db_exec(p->db, &st_sweep, v, NULL, NULL, on_swept, p) != 0) {
        count_log(&p->stats->failed, "presence: the sweep of older broker boots not sent%s%s (%llu such so far)", "",
                  "");
        p->sweep_boot = 0;
        return;
    }
    p->inflight++;
}

/* A boot newer than any this process saw: this worker sweeps for it. */
static void boot_seen(igw_presence *p, int64_t boot)
{
    if (igw_presence_boot_claim(&p->stats->boot, boot) && igw_presence_sweep_begin(&p->sweep_boot, boot))
        sweep_next(p);
}

/* ---- API ------------------------------------------------------------------------------- */

void igw_presence_submit(igw_presence *p, const char *product_id, const char *device_name, const char *payload,
                         size_t len)
{
    igw_presence_fact f;
    igw_presence_plan plan;
    bool broker = !product_id[0] && !device_name[0];
    if (igw_presence_parse(payload, len, &f) != 0 || igw_presence_plan_of(product_id, device_name, &f, &plan) != 0) {
        count_log(&p->stats->malformed, "presence: not a fact, from %s/%s, dropped (%llu such so far)",
                  broker ? "the broker" : product_id, broker ? "" : device_name);
        return;
    }
    atomic_fetch_add(&p->stats->facts[f.state], 1);
    /* Before the device's own statement, on the same connection: the
     * sweep's first batch runs first. */
    boot_seen(p, f.boot);
    if (!plan.device)
        return;
    igw_engine *en = p->engine ? *p->engine : NULL;
    if (plan.end_legs && en && igw_engine_device_offline(en, product_id, device_name) != 0)
        igw_log(IGW_LOG_WARN, NULL, "presence: %s/%s offline not handed to the session engine", product_id,
                device_name);
    char boot[24], seq[24], at[24];
    snprintf(boot, sizeof boot, "%" PRId64, f.boot);
    snprintf(seq, sizeof seq, "%" PRId64, f.seq);
    snprintf(at, sizeof at, "%" PRId64, f.at_ms);
    const char *v[APPLY_NP] = {[APPLY_P_PID] = product_id, [APPLY_P_DN] = device_name,
                               [APPLY_P_ONLINE] = plan.online ? "t" : "f", [APPLY_P_BOOT] = boot,
                               [APPLY_P_SEQ] = seq, [APPLY_P_AT] = at};
    if (igw_db_exec(p->db, &st_apply, v, NULL, NULL, on_applied, p) != 0) {
        count_log(&p->stats->failed, "presence: a fact of %s/%s not sent (%llu such so far)", product_id, device_name);
        return;
    }
    p->inflight++;
}

igw_presence *igw_presence_create(igw_db *db, igw_presence_stats *stats, igw_engine *const *engine,
                                  _Atomic(igw_mqtt *) *mqtt)
{
    igw_presence *p;
    if (!db || !stats || !(p = calloc(1, sizeof *p)))
        return NULL;
    p->db = db;
    p->stats = stats;
    p->engine = engine;
    p->mqtt = mqtt;
    return p;
}

bool igw_presence_idle(const igw_presence *p)
{
    return !p || p->inflight == 0;
}

void igw_presence_destroy(igw_presence *p)
{
    free(p);
}

void igw_presence_metrics_write(FILE *f, const igw_presence_stats *s)
{
    fprintf(f,
            "# HELP igw_presence_total Presence facts from the broker, by state.\n"
            "# TYPE igw_presence_total counter\n"
            "igw_presence_total{state=\"online\"} %" PRIu64 "\nigw_presence_total{state=\"offline\"} %" PRIu64 "\n"
            "igw_presence_total{state=\"boot\"} %" PRIu64 "\n"
            "# HELP igw_presence_results_total Device presence facts by outcome: stored, ignored (older than the "
            "stored one, or an unknown device), failed (database).\n"
            "# TYPE igw_presence_results_total counter\n"
            "igw_presence_results_total{result=\"applied\"} %" PRIu64 "\n"
            "igw_presence_results_total{result=\"ignored\"} %" PRIu64 "\n"
            "igw_presence_results_total{result=\"failed\"} %" PRIu64 "\n"
            "# HELP igw_presence_malformed_total Messages on the presence topics that are no fact.\n"
            "# TYPE igw_presence_malformed_total counter\nigw_presence_malformed_total %" PRIu64 "\n"
            "# HELP igw_presence_swept_total Online devices set offline because their broker restarted.\n"
            "# TYPE igw_presence_swept_total counter\nigw_presence_swept_total %" PRIu64 "\n"
            "# HELP igw_presence_boot The newest broker boot seen (its start, Unix ms; 0: none yet).\n"
            "# TYPE igw_presence_boot gauge\nigw_presence_boot %" PRId64 "\n",
            (uint64_t)atomic_load(&s->facts[IGW_PRESENCE_ONLINE]), (uint64_t)atomic_load(&s->facts[IGW_PRESENCE_OFFLINE]),
            (uint64_t)atomic_load(&s->facts[IGW_PRESENCE_BOOT]), (uint64_t)atomic_load(&s->applied),
            (uint64_t)atomic_load(&s->ignored), (uint64_t)atomic_load(&s->failed), (uint64_t)atomic_load(&s->malformed),
            (uint64_t)atomic_load(&s->swept), (int64_t)atomic_load(&s->boot));
}
