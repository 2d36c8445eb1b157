/* metrics.c - see metrics.h. */
#include "http/metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Histogram bucket upper bounds in microseconds (le label in seconds). */
static const uint64_t bucket_us[] = {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
                                     1000000, 2500000, 5000000, 10000000};
static const char *const bucket_le[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
                                        "0.01",   "0.025",   "0.05",   "0.1",   "0.25",   "0.5",
                                        "1",      "2.5",     "5",      "10"};
#define NBUCKETS (sizeof bucket_us / sizeof bucket_us[0])

#define SLOTS_MAX (IGW_ROUTE__COUNT + IGW_METRICS_EXTRA_MAX + 1)

struct igw_metrics_shard {
    _Alignas(64) atomic_uint_fast64_t requests[SLOTS_MAX][IGW_ERR__COUNT];
    atomic_uint_fast64_t buckets[SLOTS_MAX][NBUCKETS + 1]; /* last: over the largest bound */
    atomic_uint_fast64_t sum_us[SLOTS_MAX];
};

struct igw_metrics {
    unsigned nshards;
    igw_metrics_shard *shards;
    const char *extra[IGW_METRICS_EXTRA_MAX];
    unsigned nslots; /* the generated routes, the extra ones, "none" */
    double start_time; /* Unix seconds */
};

igw_metrics *igw_metrics_create(unsigned nshards, const char *const *extra, unsigned nextra)
{
    if (nextra > IGW_METRICS_EXTRA_MAX)
        return NULL;
    igw_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    for (unsigned i = 0; i < nextra; i++)
        m->extra[i] = extra[i];
    m->nslots = IGW_ROUTE__COUNT + nextra + 1;
    size_t size = sizeof(igw_metrics_shard) * (nshards ? nshards : 1);
    size = (size + 63) / 64 * 64;
    m->shards = aligned_alloc(64, size);
    if (!m->shards) {
        free(m);
        return NULL;
    }
    memset(m->shards, 0, size); /* zero is a valid atomic_uint_fast64_t value on every target we build for */
    m->nshards = nshards;
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
        m->start_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    return m;
}

void igw_metrics_destroy(igw_metrics *m)
{
    if (!m)
        return;
    free(m->shards);
    free(m);
}

igw_metrics_shard *igw_metrics_shard_get(igw_metrics *m, unsigned i)
{
    return i < m->nshards ? &m->shards[i] : NULL;
}

/* Single writer: a relaxed load and store, no locked instruction. */
static inline void bump(atomic_uint_fast64_t *a, uint64_t by)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + by, memory_order_relaxed);
}

void igw_metrics_observe(igw_metrics_shard *s, unsigned route, unsigned cls, uint64_t duration_us)
{
    if (!s || route >= SLOTS_MAX || cls >= IGW_ERR__COUNT)
        return;
    bump(&s->requests[route][cls], 1);
    size_t b = 0;
    while (b < NBUCKETS && duration_us > bucket_us[b])
        b++;
    bump(&s->buckets[route][b], 1);
    bump(&s->sum_us[route], duration_us);
}

unsigned igw_metrics_none(const igw_metrics *m)
{
    return m->nslots - 1;
}

const char *igw_metrics_route_name(const igw_metrics *m, unsigned route)
{
    if (route < IGW_ROUTE__COUNT)
        return igw_routes[route].name;
    if (route < m->nslots - 1)
        return m->extra[route - IGW_ROUTE__COUNT];
    return "none";
}

static uint64_t load(const atomic_uint_fast64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

int igw_metrics_render(igw_metrics *m, char **out, size_t *len)
{
    return igw_metrics_render_with(m, NULL, NULL, out, len);
}

int igw_metrics_render_with(igw_metrics *m, void (*extra)(void *arg, FILE *f), void *arg, char **out, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return -1;
    fprintf(f, "# HELP igw_requests_total Requests answered, by route and envelope code.\n"
               "# TYPE igw_requests_total counter\n");
    for (unsigned r = 0; r < m->nslots; r++)
        for (unsigned c = 0; c < IGW_ERR__COUNT; c++) {
            uint64_t n = 0;
            for (unsigned s = 0; s < m->nshards; s++)
                n += load(&m->shards[s].requests[r][c]);
            if (n)
                fprintf(f, "igw_requests_total{route=\"%s\",code=\"%lld\"} %llu\n", igw_metrics_route_name(m, r),
                        (long long)igw_error_classes[c].code, (unsigned long long)n);
        }
    fprintf(f, "# HELP igw_request_duration_seconds Time from the complete request to the reply, by route.\n"
               "# TYPE igw_request_duration_seconds histogram\n");
    for (unsigned r = 0; r < m->nslots; r++) {
        uint64_t b[NBUCKETS + 1] = {0}, sum = 0, count = 0;
        for (unsigned s = 0; s < m->nshards; s++) {
            for (size_t k = 0; k <= NBUCKETS; k++)
                b[k] += load(&m->shards[s].buckets[r][k]);
            sum += load(&m->shards[s].sum_us[r]);
        }
        for (size_t k = 0; k <= NBUCKETS; k++)
            count += b[k];
        if (!count)
            continue;
        const char *name = igw_metrics_route_name(m, r);
        uint64_t cum = 0;
        for (size_t k = 0; k < NBUCKETS; k++) {
            cum += b[k];
            fprintf(f, "igw_request_duration_seconds_bucket{route=\"%s\",le=\"%s\"} %llu\n", name, bucket_le[k],
                    (unsigned long long)cum);
        }
        fprintf(f, "igw_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", name,
                (unsigned long long)count);
        fprintf(f, "igw_request_duration_seconds_sum{route=\"%s\"} %.6f\n", name, (double)sum / 1e6);
        fprintf(f, "igw_request_duration_seconds_count{route=\"%s\"} %llu\n", name, (unsigned long long)count);
    }
    fprintf(f, "# HELP process_start_time_seconds Start time of the process since the Unix epoch.\n"
               "# TYPE process_start_time_seconds gauge\n"
               "process_start_time_seconds %.3f\n",
            m->start_time);
    if (extra)
        extra(arg, f);
    if (ferror(f)) {
        fclose(f);
        free(buf);
        return -1;
    }
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = size;
    return 0;
}
