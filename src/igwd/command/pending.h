/* pending.h - the device commands this igwd process published and whose
 * reply it has not seen yet, by the device's key (productID, deviceName,
 * device msgToken).
 *
 * Why: a device's reply names only its device token; the command it answers
 * (endpoint, msgToken, method, enterprise) had to be read back from
 * device_commands before the result could be written, and that read waited
 * in the connection's pipeline behind whatever commit was in flight: one
 * more database turn between the device and the application's push. The
 * process that accepted the command knows all of it already.
 *
 * A hint, never the truth: results.c stores what it finds here with the
 * same statement as before, whose checks (the result's deliveryId derived
 * from the command, the device_commands row settled only once) make a stale
 * entry harmless; anything not found here (another process accepted it,
 * igwd restarted, the map was full, the deadline passed) is looked up as
 * before. Bounded: at most `max` entries; an entry leaves when its reply
 * takes it or, once its deadline passed, when a later call prunes it.
 * Thread-safe (one mutex): commands are accepted on any worker, replies
 * arrive on the device's worker. */
#ifndef IGW_PENDING_H
#define IGW_PENDING_H

#include <stddef.h>
#include <stdint.h>

typedef struct igw_pending igw_pending;

/* One published device command. */
typedef struct igw_pending_cmd {
    const char *product_id, *device_name, *device_token; /* the key */
    const char *endpoint_id, *msg_token, *method;         /* the command */
    const char *enterprise_id;                             /* decimal, as the database prints it */
    int64_t deadline_ms;                                   /* wall clock: its timeout result is due */
} igw_pending_cmd;

/* Counters since creation (read under the lock). */
typedef struct igw_pending_stats {
    uint64_t entries; /* now, after pruning */
    uint64_t hits;    /* takes that found a live entry */
    uint64_t misses;  /* takes that found none, or one past its deadline */
    uint64_t refused; /* puts refused: max live entries held, a string too long, out of memory */
} igw_pending_stats;

/* An empty map of at most max (1..2^20) entries, or NULL. */
igw_pending *igw_pending_create(size_t max);
void igw_pending_destroy(igw_pending *p);

/* Records c (its strings copied; each at most 255 bytes) after first
 * dropping entries whose deadline is before now_ms (as take and stats_get
 * do). A key already present is
 * replaced. 0, or -1 when full, out of memory or a string is too long:
 * the reply will simply be looked up. */
int igw_pending_put(igw_pending *p, const igw_pending_cmd *c, int64_t now_ms);

/* Removes and returns the entry of (product_id, device_name, token[0..len)),
 * or NULL when there is none or its deadline is before now_ms (removed too:
 * the deadline's result may be stored already, let the database tell). The
 * caller owns the result: igw_pending_release. */
igw_pending_cmd *igw_pending_take(igw_pending *p, const char *product_id, const char *device_name, const char *token,
                                  size_t token_len, int64_t now_ms);
void igw_pending_release(igw_pending_cmd *c);

/* The counters, once the entries past their deadline at now_ms are dropped. */
void igw_pending_stats_get(igw_pending *p, int64_t now_ms, igw_pending_stats *out);

#endif
