/* ready.h - reachability probes of igwd's dependencies, for /readyz.
 *
 * Each probe is synchronous and bounded by the configured timeout (name
 * resolution excepted: getaddrinfo has no timeout). A dependency that is
 * not configured counts as down: igwd cannot serve without it. */
#ifndef IGW_READY_H
#define IGW_READY_H

#include "core/config.h"

enum {
    IGW_READY_POSTGRES = 1u << 0, /* a connection with pg_dsn completes */
    IGW_READY_REDIS = 1u << 1,    /* TCP connect and PING answered PONG */
    IGW_READY_MQTT = 1u << 2,     /* TCP connect to the broker */
    IGW_READY__ALL = (1u << 3) - 1
};

/* Probes the dependencies not in `known` in turn; returns the set of
 * IGW_READY_* bits of those that are down (0: all reachable). `known` are
 * judged by the caller from its live connections (no probe, no blocking). */
unsigned igw_ready_check(const igw_config *c, unsigned known);

/* The name of one IGW_READY_* bit ("postgres", "redis", "mqtt"). */
const char *igw_ready_name(unsigned bit);

#endif
