/* modelcache.c - see modelcache.h. A flat array scanned in full: 256
 * entries compare a 64-bit hash each, well under a microsecond, and
 * least-recently-used eviction needs no list to maintain. */
#include "command/modelcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

typedef struct mc_entry {
    uint64_t hash; /* of the product id; 0 marks a free slot (hashes are never 0) */
    uint64_t used; /* tick of the last get or put */
    char product_id[IGW_MODELCACHE_KEY_MAX + 1];
    char version[IGW_MODELCACHE_VERSION_MAX + 1];
    const igw_thingmodel *model;
    size_t bytes; /* the arena's size, for the byte bound */
    igw_arena arena;
} mc_entry;

struct igw_modelcache {
    mc_entry e[IGW_MODELCACHE_ENTRIES];
    size_t n, bytes;
    uint64_t tick;
};

static uint64_t key_hash(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h ? h : 1;
}

static mc_entry *find(igw_modelcache *mc, const char *product_id, uint64_t h)
{
    for (size_t i = 0; i < IGW_MODELCACHE_ENTRIES; i++)
        if (mc->e[i].hash == h && strcmp(mc->e[i].product_id, product_id) == 0)
            return &mc->e[i];
    return NULL;
}

static void drop(igw_modelcache *mc, mc_entry *e)
{
    igw_arena_free(&e->arena);
    mc->bytes -= e->bytes;
    mc->n--;
    memset(e, 0, sizeof *e);
}

/* The least recently used entry other than `keep`, or NULL. */
static mc_entry *oldest(igw_modelcache *mc, const mc_entry *keep)
{
    mc_entry *o = NULL;
    for (size_t i = 0; i < IGW_MODELCACHE_ENTRIES; i++) {
        mc_entry *e = &mc->e[i];
        if (e->hash && e != keep && (!o || e->used < o->used))
            o = e;
    }
    return o;
}

igw_modelcache *igw_modelcache_create(void)
{
    return calloc(1, sizeof(igw_modelcache));
}

void igw_modelcache_destroy(igw_modelcache *mc)
{
    if (!mc)
        return;
    for (size_t i = 0; i < IGW_MODELCACHE_ENTRIES; i++)
        if (mc->e[i].hash)
            igw_arena_free(&mc->e[i].arena);
    free(mc);
}

const igw_thingmodel *igw_modelcache_get(igw_modelcache *mc, const char *product_id, const char **version)
{
    mc_entry *e = find(mc, product_id, key_hash(product_id));
    if (!e)
        return NULL;
    e->used = ++mc->tick;
    *version = e->version;
    return e->model;
}

int igw_modelcache_put(igw_modelcache *mc, const char *product_id, const char *version, const char *json, size_t len,
                       const igw_thingmodel **out, igw_json *err)
{
    uint64_t h = key_hash(product_id);
    mc_entry *e = find(mc, product_id, h);
    if (e) /* the product's old version goes whatever happens next */
        drop(mc, e);
    if (strlen(product_id) > IGW_MODELCACHE_KEY_MAX || strlen(version) > IGW_MODELCACHE_VERSION_MAX) {
        igw_json_init(err, "", 0, NULL, 1);
        return igw_json_fail(err, IGW_JERR_SIZE, "product id or model version too long to cache");
    }
    igw_arena a;
    igw_arena_init(&a, IGW_MODELCACHE_MODEL_MAX);
    igw_thingmodel *m = NULL;
    if (igw_thingmodel_load(json, len, &a, &m, err)) {
        igw_arena_free(&a);
        return -1;
    }
    if (mc->n == IGW_MODELCACHE_ENTRIES)
        drop(mc, oldest(mc, NULL));
    for (size_t i = 0; i < IGW_MODELCACHE_ENTRIES; i++)
        if (!mc->e[i].hash) {
            e = &mc->e[i];
            break;
        }
    e->hash = h;
    e->used = ++mc->tick;
    strcpy(e->product_id, product_id); /* lengths checked above */
    strcpy(e->version, version);
    e->model = m;
    e->arena = a; /* the arena's chunks move with it: nothing points at the struct itself */
    e->bytes = a.total;
    mc->bytes += e->bytes;
    mc->n++;
    mc_entry *o;
    while (mc->bytes > IGW_MODELCACHE_BYTES && (o = oldest(mc, e)))
        drop(mc, o);
    *out = e->model;
    return 0;
}
