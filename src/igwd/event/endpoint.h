/* endpoint.h - application endpoints: where an authenticated user's events
 * go. An endpoint is 144 random bits (24 URL-safe base64 characters) bound
 * to the user and enterprise that registered it, valid one hour from its
 * registration and never renewed (spec: Limits); the outbox delivers to it
 * and sweeps it once expired (outbox.h).
 *
 * Runs on the worker that owns `db`; the callback comes from its loop. */
#ifndef IGW_EVENT_ENDPOINT_H
#define IGW_EVENT_ENDPOINT_H

#include <stdint.h>

#include "core/db.h"

#define IGW_ENDPOINT_ID_MAX 40               /* buffer for an id, with its NUL */

/* The outcome: `id` and `expires_at_ms` when registered (err NULL), else
 * err says why for logs (never for clients). Valid during the call. */
typedef struct igw_endpoint_result {
    const char *id;
    int64_t expires_at_ms;
    const char *err;
} igw_endpoint_result;

typedef void (*igw_endpoint_cb)(void *arg, const igw_endpoint_result *r);

/* Registers a new endpoint for (enterprise_id, user_id) living ttl_ms
 * (endpoint_ttl_ms), durably: cb once the row committed (or failed). 0, or
 * -1 when nothing was sent (out of memory, no randomness, the connection's
 * queue full): cb is not called. */
int igw_endpoint_register(igw_db *db, int64_t enterprise_id, int64_t user_id, int64_t ttl_ms, igw_endpoint_cb cb,
                          void *arg);

#endif
