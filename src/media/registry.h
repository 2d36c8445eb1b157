/* registry.h - the media core's peers by id and its event queue, under the
 * core's lock (core.h: struct igw_media). Shared by the public calls
 * (media.c), which find the thread of a peer and hand out the events, and
 * the packet path (forward.c), which enters and removes its nodes and
 * raises their events: neither calls the other for it. Any thread unless
 * said. */
#ifndef IGW_MEDIA_REGISTRY_H
#define IGW_MEDIA_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"

/* Queues an event for node n (at most 65536 are kept: beyond, the oldest is
 * dropped and counted) and makes the event fd readable. */
void igw_registry_emit(igw_media *m, igw_media_event_kind kind, const igw_node *n, const char *reason);
/* The same, with an RTP timestamp (FRAME). */
void igw_registry_emit_ts(igw_media *m, igw_media_event_kind kind, const igw_node *n, const char *reason,
                          uint32_t rtp_ts);

/* Takes the oldest event into *ev; false when none. The event fd stays
 * readable while events remain. */
bool igw_registry_take(igw_media *m, igw_media_event *ev);

/* Enters n under its id; false if the id is taken. */
bool igw_registry_add(igw_media *m, igw_node *n);

/* Removes n from the registry (before it is freed); an id now held by
 * another node is left alone. */
void igw_registry_remove(igw_media *m, igw_node *n);

/* The thread of the node registered under id, and its revision and role
 * (rev, is_source optional); NULL if unknown. */
igw_mthread *igw_registry_lookup(igw_media *m, const char *id, uint32_t *rev, bool *is_source);

/* On media thread t: the node registered under id if it lives on t (valid
 * until t frees it), else NULL; *elsewhere (optional) tells whether the id
 * is registered on another thread. */
igw_node *igw_registry_here(igw_mthread *t, const char *id, bool *elsewhere);

#endif
