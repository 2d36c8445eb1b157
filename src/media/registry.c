/* registry.c - see registry.h. */
#include "registry.h"

#include <errno.h>
#include <unistd.h>

#include "clock.h"

#define EVENTS_MAX 65536

/* ---- events ---- */

void igw_registry_emit(igw_media *m, igw_media_event_kind kind, const igw_node *n, const char *reason)
{
    igw_registry_emit_ts(m, kind, n, reason, 0);
}

void igw_registry_emit_ts(igw_media *m, igw_media_event_kind kind, const igw_node *n, const char *reason,
                          uint32_t rtp_ts)
{
    igw_media_event *ev = g_new0(igw_media_event, 1);
    ev->rtp_ts = rtp_ts;
    ev->kind = kind;
    g_strlcpy(ev->id, n->id, sizeof ev->id);
    ev->revision = n->revision;
    ev->is_source = n->is_source;
    g_strlcpy(ev->reason, reason ? reason : "", sizeof ev->reason);
    ev->at_us = igw_clock_us();
    g_mutex_lock(&m->lock);
    if (m->events.length >= EVENTS_MAX) {
        g_free(g_queue_pop_head(&m->events));
        m->events_dropped++;
    }
    g_queue_push_tail(&m->events, ev);
    uint64_t one = 1;
    /* Written under the lock so a reader that empties the queue cannot miss it. */
    if (write(m->efd, &one, sizeof one) < 0 && errno != EAGAIN)
        g_warning("igw-media: event fd write failed");
    g_mutex_unlock(&m->lock);
}

bool igw_registry_take(igw_media *m, igw_media_event *out)
{
    g_mutex_lock(&m->lock);
    igw_media_event *ev = g_queue_pop_head(&m->events);
    if (m->events.length == 0) {
        uint64_t v;
        (void)!read(m->efd, &v, sizeof v); /* EAGAIN when already drained */
    }
    g_mutex_unlock(&m->lock);
    if (!ev)
        return false;
    *out = *ev;
    g_free(ev);
    return true;
}

/* ---- peers by id ---- */

bool igw_registry_add(igw_media *m, igw_node *n)
{
    g_mutex_lock(&m->lock);
    bool free_id = !g_hash_table_contains(m->registry, n->id);
    if (free_id)
        g_hash_table_insert(m->registry, n->id, n);
    g_mutex_unlock(&m->lock);
    return free_id;
}

void igw_registry_remove(igw_media *m, igw_node *n)
{
    g_mutex_lock(&m->lock);
    if (g_hash_table_lookup(m->registry, n->id) == n)
        g_hash_table_remove(m->registry, n->id);
    g_mutex_unlock(&m->lock);
}

igw_mthread *igw_registry_lookup(igw_media *m, const char *id, uint32_t *rev, bool *is_source)
{
    g_mutex_lock(&m->lock);
    igw_node *n = g_hash_table_lookup(m->registry, id);
    igw_mthread *t = n ? n->t : NULL;
    if (n && rev)
        *rev = n->revision;
    if (n && is_source)
        *is_source = n->is_source;
    g_mutex_unlock(&m->lock);
    return t;
}

igw_node *igw_registry_here(igw_mthread *t, const char *id, bool *elsewhere)
{
    igw_media *m = t->m;
    g_mutex_lock(&m->lock);
    igw_node *n = g_hash_table_lookup(m->registry, id);
    /* n->t is read under the lock: a node of another thread may be freed
     * the moment the lock is released. */
    bool here = n && n->t == t;
    g_mutex_unlock(&m->lock);
    if (elsewhere)
        *elsewhere = n && !here;
    return here ? n : NULL;
}
