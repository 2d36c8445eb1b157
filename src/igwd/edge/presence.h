/* presence.h - device presence from the broker: the auth plugin's facts
 * (src/mqttauth/README.md, docs/device-protocol.md "Presence") made the
 * devices' `online`, `presence_at`, `presence_boot`, `presence_seq`.
 *
 * A fact is {"state": "online"|"offline"|"boot", "boot", "seq", "at"}: boot
 * is the broker process's start (Unix ms), seq its count of facts, at when
 * the broker saw the connection or disconnection (Unix ms). A device's fact
 * is applied only when (boot, seq) is newer than the device's stored pair
 * (one statement on the device's primary key), so facts handled out of
 * order — several nodes share the presence subscription, each worker its
 * own devices — never let an older fact overwrite a newer one; a fact of an
 * unknown device changes nothing.
 *
 * A broker restart ends every connection it had without a fact. So the
 * first fact of a boot newer than any this process has seen (the broker's
 * own "boot" fact, answering igwd's sync at each connection, or any
 * device's) starts the sweep: every device whose stored boot is older is
 * set offline at (that boot, 0), IGW_PRESENCE_SWEEP_BATCH per statement
 * until none is left. A fact of the older boot that arrives after is older
 * than (boot, 0): ignored. Several nodes sweep at once harmlessly (rows
 * taken FOR UPDATE, each set once). Boot ids order broker processes by
 * their start time (docs/decisions.md).
 *
 * One igw_presence per worker, on its loop thread, with one of its database
 * connections (not owned); igw_presence_stats is shared by the workers of
 * the process and read by any thread. */
#ifndef IGW_EDGE_PRESENCE_H
#define IGW_EDGE_PRESENCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/db.h"
#include "core/mqtt.h"
#include "edge/decide.h" /* the fact (igw_presence_fact), its parser and what it does */
#include "session/engine.h"

#define IGW_PRESENCE_SWEEP_BATCH 1000 /* devices set offline per statement of a sweep */

typedef struct igw_presence igw_presence;

/* Counters of the process (zero-initialised by the owner; atomics). */
typedef struct igw_presence_stats {
    atomic_uint_fast64_t facts[IGW_PRESENCE__STATES]; /* well-formed facts received, by state */
    atomic_uint_fast64_t applied;   /* device facts stored */
    atomic_uint_fast64_t ignored;   /* device facts older than the stored one, or of an unknown device */
    atomic_uint_fast64_t malformed; /* payloads or topics that are no fact */
    atomic_uint_fast64_t failed;    /* statements the database failed */
    atomic_uint_fast64_t swept;     /* devices set offline because their broker restarted */
    _Atomic int64_t boot;           /* the newest broker boot seen (0: none yet) */
} igw_presence_stats;

/* The presence of one worker, on db's loop (db not owned, must outlive it;
 * destroy the database first: its failed callbacks still reach it).
 * engine (may be NULL; read at each fact): the node's session engine, told
 * of every device that went offline, whose legs end at once. mqtt (may be
 * NULL; read at each fact): the broker's client, by which a camera online
 * without a stored capability report is asked for one. NULL when out of
 * memory. */
igw_presence *igw_presence_create(igw_db *db, igw_presence_stats *stats, igw_engine *const *engine,
                                  _Atomic(igw_mqtt *) *mqtt);

/* Handles one fact from the broker: product_id and device_name "" for the
 * broker's fact (igw/presence/broker), else the device's (from the topic).
 * Malformed facts are counted and logged (the first and every 1000th).
 * Loop thread. */
void igw_presence_submit(igw_presence *p, const char *product_id, const char *device_name, const char *payload,
                         size_t len);

/* True when no statement of this presence is in flight. */
bool igw_presence_idle(const igw_presence *p);

/* Frees (NULL is fine). After the database's destroy. */
void igw_presence_destroy(igw_presence *p);

/* Prometheus text of the counters. */
void igw_presence_metrics_write(FILE *f, const igw_presence_stats *s);

#endif
