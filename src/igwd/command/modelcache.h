/* modelcache.h - one worker's parsed thing models, by product.
 *
 * Each entry remembers the version of the product row it was parsed from (an
 * opaque text the SQL computes, see command/ledger.c); whoever relies on
 * an entry must have the database confirm that version in the same statement
 * that acts on it, so the cache only saves parsing and shipping the model,
 * never decides alone. Bounded by entries and bytes, least recently used
 * evicted; each entry owns its arena. One per worker thread, no locking. */
#ifndef IGW_MODELCACHE_H
#define IGW_MODELCACHE_H

#include <stddef.h>

#include "api.h"
#include "json.h"
#include "thingmodel.h"

#define IGW_MODELCACHE_ENTRIES 256          /* products per worker */
#define IGW_MODELCACHE_BYTES (32u << 20)    /* parsed models per worker, all entries */
#define IGW_MODELCACHE_MODEL_MAX (4u << 20) /* one parsed model (its arena's limit) */
#define IGW_MODELCACHE_KEY_MAX IGW_Ident_MAX /* product id bytes (Target.productID) */
#define IGW_MODELCACHE_VERSION_MAX 47       /* version bytes */

typedef struct igw_modelcache igw_modelcache;

/* An empty cache, or NULL when out of memory. */
igw_modelcache *igw_modelcache_create(void);

/* Frees every entry and the cache; NULL is ignored. */
void igw_modelcache_destroy(igw_modelcache *mc);

/* The model cached for product_id and, in *version, the version it was
 * parsed from; NULL when none. Both stay valid until the next
 * igw_modelcache_put or destroy. */
const igw_thingmodel *igw_modelcache_get(igw_modelcache *mc, const char *product_id, const char **version);

/* Parses `json` as product_id's model at `version` and caches it, replacing
 * the product's entry (and evicting the least recently used ones when over
 * the bounds). 0 with *out (valid as for get), or -1: the model does not
 * load (err says why; err->err is IGW_JERR_NOMEM when memory ran out) or the
 * key or version is too long (err->err IGW_JERR_SIZE). Nothing of the
 * product is cached after a failure. */
int igw_modelcache_put(igw_modelcache *mc, const char *product_id, const char *version, const char *json, size_t len,
                       const igw_thingmodel **out, igw_json *err);

#endif
