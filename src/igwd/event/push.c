/* push.c - see push.h. */
#include "event/push.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jw.h"
#include "core/log.h"
#include "event/outbox.h"

#define PUSH_BATCH 256    /* pending deliveries read per query (by watermark) */
#define PUSH_SLACK 100000 /* watermarks below the highest sent that are read again: a delivery whose
                             watermark was drawn earlier may commit later */
#define PUSH_BUCKETS_MIN 64      /* the endpoint table's first size */
#define PUSH_BUCKETS_MAX 65536   /* it doubles while sockets outnumber buckets, up to this; then chains grow */

static const igw_db_stmt stmt_endpoint = {
    "igw_push_endpoint",
    "SELECT 1 FROM endpoints WHERE endpoint_id = $1 AND enterprise_id = $2::bigint AND user_id = $3::bigint "
    "AND expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    3};

static const igw_db_stmt stmt_pending = {
    "igw_push_pending",
    "SELECT d.delivery_id, e.body_text, d.watermark FROM deliveries d JOIN events e ON e.event_id = d.event_id "
    "JOIN endpoints p ON p.endpoint_id = d.endpoint_id "
    "WHERE d.endpoint_id = $1 AND p.enterprise_id = $2::bigint AND p.user_id = $3::bigint AND d.state = 'pending' "
    "AND d.acked_at IS NULL "
    "AND d.expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint AND d.watermark > $4::bigint "
    "ORDER BY d.watermark LIMIT 256",
    4};

typedef struct igw_push_sub sub;

struct igw_push_sub {
    struct igw_push_sub *next, **pprev; /* its chain in the endpoint table; pprev NULL while not in it */
    igw_push *p;
    bool open;          /* streaming: started and not ended */
    igw_push_sink sink; /* where its frames go, once started */
    void (*checked)(void *arg, int found, const char *err); /* igw_push_sub_check's */
    void *checked_arg;
    char endpoint[72], ent[24], user[24];
    bool reading, again;
    /* Watermarks sent (unique per delivery), ascending, those within
     * PUSH_SLACK of the highest; reads start there. */
    int64_t *sent;
    size_t nsent, capsent;
    int64_t from; /* the next read: watermarks above this one */
};

/* The worker's streaming subscribers by endpoint id: a notification finds
 * its endpoint's subscribers in one chain (several connections may serve
 * one endpoint). */
struct igw_push {
    igw_db *db;
    sub **buckets; /* nbuckets chains, a power of two */
    size_t nbuckets, nsubs;
};

static size_t hash_of(const char *id, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)id[i]) * UINT64_C(1099511628211);
    return (size_t)(h ^ (h >> 32));
}

static void chain_push(sub **head, sub *s)
{
    s->next = *head;
    if (s->next)
        s->next->pprev = &s->next;
    s->pprev = head;
    *head = s;
}

/* Doubles the table while subscribers outnumber buckets (up to PUSH_BUCKETS_MAX);
 * out of memory, it stays as it is: longer chains, same answers. */
static void table_grow(igw_push *p)
{
    if (p->nsubs <= p->nbuckets || p->nbuckets >= PUSH_BUCKETS_MAX)
        return;
    size_t n = p->nbuckets * 2;
    sub **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < p->nbuckets; i++) {
        sub *s = p->buckets[i], *next;
        for (; s; s = next) {
            next = s->next;
            chain_push(&b[hash_of(s->endpoint, strlen(s->endpoint)) & (n - 1)], s);
        }
    }
    free(p->buckets);
    p->buckets = b;
    p->nbuckets = n;
}

static void table_add(igw_push *p, sub *s)
{
    chain_push(&p->buckets[hash_of(s->endpoint, strlen(s->endpoint)) & (p->nbuckets - 1)], s);
    p->nsubs++;
    table_grow(p);
}

static void sub_free(sub *s)
{
    free(s->sent);
    free(s);
}

static bool was_sent(const sub *s, int64_t wm)
{
    size_t lo = 0, hi = s->nsent;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->sent[mid] < wm)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nsent && s->sent[lo] == wm;
}

/* Records wm (kept sorted; usually an append) and forgets what fell out of
 * the slack. 0, or -1 when out of memory. */
static int mark_sent(sub *s, int64_t wm)
{
    if (s->nsent == s->capsent) {
        size_t cap = s->capsent ? s->capsent * 2 : 256;
        int64_t *p = realloc(s->sent, cap * sizeof *p);
        if (!p)
            return -1;
        s->sent = p;
        s->capsent = cap;
    }
    size_t at = s->nsent;
    while (at > 0 && s->sent[at - 1] > wm)
        at--;
    memmove(s->sent + at + 1, s->sent + at, (s->nsent - at) * sizeof *s->sent);
    s->sent[at] = wm;
    s->nsent++;
    int64_t floor = s->sent[s->nsent - 1] - PUSH_SLACK;
    size_t drop = 0;
    while (drop < s->nsent && s->sent[drop] <= floor)
        drop++;
    if (drop) {
        memmove(s->sent, s->sent + drop, (s->nsent - drop) * sizeof *s->sent);
        s->nsent -= drop;
    }
    return 0;
}

/* Sends the delivery (watermark wm) as an interaction.event frame unless it
 * went already, encoding into jw. Marked sent only once the frame is built:
 * a delivery not sent for want of memory is left for a read. 0 (sent, or
 * sent before), 1 (out of memory), -1 (the send failed: closed, the
 * connection's end ends the subscriber). */
static int send_delivery(sub *s, igw_jw *jw, int64_t wm, igw_str id, igw_str event)
{
    if (was_sent(s, wm))
        return 0;
    igw_PushFrame f = {.has = IGW_PushFrame_method | IGW_PushFrame_deliveryId | IGW_PushFrame_event,
                       .method = IGW_PushMethod_interaction_event,
                       .deliveryId = id,
                       .event = event};
    igw_jw_reset(jw);
    igw_encode_PushFrame(jw, &f);
    if (igw_jw_status(jw) || mark_sent(s, wm) != 0)
        return 1;
    return s->sink.send(s->sink.arg, jw->buf, jw->len) != 0 ? -1 : 0;
}

static void unlink_sub(sub *s)
{
    if (!s->pprev)
        return;
    *s->pprev = s->next;
    if (s->next)
        s->next->pprev = s->pprev;
    s->next = NULL;
    s->pprev = NULL;
    s->p->nsubs--;
}

static void read_pending(sub *s);

static void on_pending(void *arg, const PGresult *res, const char *err)
{
    sub *s = arg;
    s->reading = false;
    if (!s->open) { /* ended meanwhile */
        sub_free(s);
        return;
    }
    if (!res) {
        igw_log(IGW_LOG_ERROR, NULL, "push: reading deliveries failed: %s", err);
        return; /* the next notification (or reconnect) tries again */
    }
    int n = PQntuples(res);
    int64_t last = s->from;
    igw_jw jw;
    igw_jw_init(&jw);
    for (int i = 0; i < n; i++) {
        const char *id = PQgetvalue(res, i, 0);
        int64_t wm = strtoll(PQgetvalue(res, i, 2), NULL, 10);
        last = wm;
        igw_str id_s = {id, strlen(id)}, ev = {PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)};
        if (send_delivery(s, &jw, wm, id_s, ev) != 0)
            break; /* out of memory, or closed (slow consumer, peer gone): its end cleans up */
    }
    igw_jw_free(&jw);
    /* A full batch: more is waiting, read on from its end. Otherwise the
     * next read starts PUSH_SLACK below the highest sent. */
    if (n == PUSH_BATCH) {
        s->from = last;
        s->again = true;
    } else {
        int64_t high = s->nsent ? s->sent[s->nsent - 1] : 0;
        s->from = high > PUSH_SLACK ? high - PUSH_SLACK : 0;
    }
    if (s->again && s->open) {
        s->again = false;
        read_pending(s);
    }
}

static void read_pending(sub *s)
{
    if (s->reading) {
        s->again = true;
        return;
    }
    char from[24];
    snprintf(from, sizeof from, "%lld", (long long)s->from);
    const char *values[4] = {s->endpoint, s->ent, s->user, from};
    if (igw_db_exec(s->p->db, &stmt_pending, values, NULL, NULL, on_pending, s) == 0)
        s->reading = true;
}

/* Sends the delivery a notification carries ("<watermark>\n<deliveryId>\n
 * <event body>", see outbox.h), saving the read back: 0, or -1 when it does
 * not parse (then the caller reads). */
static int send_notified(sub *s, const char *d)
{
    char *end;
    errno = 0;
    long long wm = strtoll(d, &end, 10);
    if (errno || end == d || *end != '\n' || wm <= 0)
        return -1;
    const char *id = end + 1;
    size_t idlen = strcspn(id, "\n");
    if (idlen == 0 || idlen > IGW_OUTBOX_ID_MAX || id[idlen] != '\n')
        return -1;
    const char *body = id + idlen + 1;
    if (!s->open)
        return 0;
    igw_jw jw;
    igw_jw_init(&jw);
    int rc = send_delivery(s, &jw, wm, (igw_str){id, idlen}, (igw_str){body, strlen(body)});
    igw_jw_free(&jw);
    return rc > 0 ? -1 : 0; /* not sent for want of memory: the read sends it; closed: its end cleans up */
}

/* Neither read_pending nor a send ends a subscriber from inside (the sink's
 * contract): the chains do not change under these loops. */
static void on_notify(void *arg, const char *channel, const char *payload)
{
    igw_push *p = arg;
    if (!channel) { /* notifications may have been lost: every subscriber catches up */
        for (size_t i = 0; i < p->nbuckets; i++)
            for (sub *s = p->buckets[i]; s; s = s->next)
                read_pending(s);
        return;
    }
    if (strcmp(channel, IGW_OUTBOX_CHANNEL) != 0 || !payload)
        return;
    size_t eplen = strcspn(payload, "\n");
    for (sub *s = p->buckets[hash_of(payload, eplen) & (p->nbuckets - 1)]; s; s = s->next) {
        if (strlen(s->endpoint) != eplen || memcmp(payload, s->endpoint, eplen) != 0)
            continue;
        /* No enterprise/user check needed: endpoint ids are unique and this
         * one was checked as the user's at attach; expiry is the reads' job. */
        if (!payload[eplen] || send_notified(s, payload + eplen + 1) != 0)
            read_pending(s);
    }
}

igw_push_sub *igw_push_sub_new(igw_push *p, igw_str endpoint, int64_t enterprise_id, int64_t user_id)
{
    sub *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    snprintf(s->endpoint, sizeof s->endpoint, "%.*s", (int)endpoint.len, endpoint.ptr);
    snprintf(s->ent, sizeof s->ent, "%lld", (long long)enterprise_id);
    snprintf(s->user, sizeof s->user, "%lld", (long long)user_id);
    return s;
}

static void on_checked(void *arg, const PGresult *res, const char *err)
{
    sub *s = arg;
    s->checked(s->checked_arg, !res ? -1 : PQntuples(res) == 1, err);
}

int igw_push_sub_check(igw_push_sub *s, void (*cb)(void *arg, int found, const char *err), void *arg)
{
    s->checked = cb;
    s->checked_arg = arg;
    const char *values[3] = {s->endpoint, s->ent, s->user};
    return igw_db_exec(s->p->db, &stmt_endpoint, values, NULL, NULL, on_checked, s) ? -1 : 0;
}

void igw_push_sub_start(igw_push_sub *s, const igw_push_sink *sink)
{
    s->sink = *sink;
    s->open = true;
    table_add(s->p, s);
    read_pending(s); /* what is pending already */
}

void igw_push_sub_end(igw_push_sub *s)
{
    unlink_sub(s);
    s->open = false;
    if (!s->reading)
        sub_free(s);
}

igw_push *igw_push_create(igw_db *db)
{
    igw_push *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->db = db;
    p->nbuckets = PUSH_BUCKETS_MIN;
    if (!(p->buckets = calloc(p->nbuckets, sizeof *p->buckets)) ||
        igw_db_listen(db, IGW_OUTBOX_CHANNEL, on_notify, p) != 0) {
        free(p->buckets);
        free(p);
        return NULL;
    }
    return p;
}

void igw_push_destroy(igw_push *p)
{
    if (!p)
        return;
    free(p->buckets);
    free(p);
}
