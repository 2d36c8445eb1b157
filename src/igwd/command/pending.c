/* pending.c - see pending.h. */
#include "command/pending.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"

#define STR_MAX 255
#define MAX_ENTRIES (1u << 20)

typedef struct node {
    igw_pending_cmd cmd; /* first: igw_pending_release frees the node through it */
    struct node *hnext;  /* bucket chain */
    struct node *prev, *next; /* put order: the deadline order, the timeout being one setting */
    uint64_t hash;
    char str[]; /* cmd's strings, each NUL-terminated */
} node;

struct igw_pending {
    pthread_mutex_t mu;
    node **bucket;
    size_t mask; /* buckets - 1, a power of two minus one */
    node *head, *tail;
    size_t max;
    igw_pending_stats st;
};

/* FNV-1a over the key's parts, each ended by a 0 that no part contains. */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h * 0x100000001b3ull; /* the 0 that ends the part */
}

static uint64_t key_hash(const char *pid, const char *dn, const char *tok, size_t tok_len)
{
    return fnv(fnv(fnv(0xcbf29ce484222325ull, pid, strlen(pid)), dn, strlen(dn)), tok, tok_len);
}

igw_pending *igw_pending_create(size_t max)
{
    if (max < 1 || max > MAX_ENTRIES)
        return NULL;
    igw_pending *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    size_t nb = 1;
    while (nb < max)
        nb <<= 1;
    if (!(p->bucket = calloc(nb, sizeof *p->bucket)) || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->bucket);
        free(p);
        return NULL;
    }
    p->mask = nb - 1;
    p->max = max;
    return p;
}

void igw_pending_destroy(igw_pending *p)
{
    if (!p)
        return;
    for (node *n = p->head, *next; n; n = next) {
        next = n->next;
        free(n);
    }
    free(p->bucket);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Unlinks n from its bucket and the put order (locked). */
static void unlink_node(igw_pending *p, node *n)
{
    node **pp = &p->bucket[n->hash & p->mask];
    while (*pp != n)
        pp = &(*pp)->hnext;
    *pp = n->hnext;
    *(n->prev ? &n->prev->next : &p->head) = n->next;
    *(n->next ? &n->next->prev : &p->tail) = n->prev;
    p->st.entries--;
}

static node *find(igw_pending *p, uint64_t h, const char *pid, const char *dn, const char *tok, size_t tok_len)
{
    for (node *n = p->bucket[h & p->mask]; n; n = n->hnext)
        if (n->hash == h && !strcmp(n->cmd.product_id, pid) && !strcmp(n->cmd.device_name, dn) &&
            strlen(n->cmd.device_token) == tok_len && !memcmp(n->cmd.device_token, tok, tok_len))
            return n;
    return NULL;
}

/* Unlinks the entries whose deadline passed, oldest first, onto *dead
 * (locked; the caller frees them after unlocking: after a burst of
 * unanswered commands that can be many). Stops at the first live one: an
 * entry put a little late (a retried write) waits behind it for a later
 * prune, or for its take, which treats it as expired. */
static void prune(igw_pending *p, int64_t now_ms, node **dead)
{
    while (p->head && p->head->cmd.deadline_ms < now_ms) {
        node *n = p->head;
        unlink_node(p, n);
        n->next = *dead;
        *dead = n;
    }
}

static void free_list(node *n)
{
    for (node *next; n; n = next) {
        next = n->next;
        free(n);
    }
}

int igw_pending_put(igw_pending *p, const igw_pending_cmd *c, int64_t now_ms)
{
    const char *s[7] = {c->product_id, c->device_name, c->device_token, c->endpoint_id,
                        c->msg_token,  c->method,      c->enterprise_id};
    size_t len[7], total = 0;
    node *n = NULL;
    for (int i = 0; i < 7; i++) {
        if (!s[i] || (len[i] = strlen(s[i])) > STR_MAX)
            goto refused;
        total += len[i] + 1;
    }
    if (!(n = malloc(sizeof *n + total)))
        goto refused;
    const char **dst[7] = {&n->cmd.product_id, &n->cmd.device_name, &n->cmd.device_token, &n->cmd.endpoint_id,
                           &n->cmd.msg_token,  &n->cmd.method,      &n->cmd.enterprise_id};
    char *w = n->str;
    for (int i = 0; i < 7; i++) {
        memcpy(w, s[i], len[i] + 1);
        *dst[i] = w;
        w += len[i] + 1;
    }
    n->cmd.deadline_ms = c->deadline_ms;
    n->hash = key_hash(c->product_id, c->device_name, c->device_token, len[2]);
    n->hnext = n->next = NULL;

    node *dead = NULL;
    igw_lock(&p->mu);
    prune(p, now_ms, &dead);
    node *old = find(p, n->hash, c->product_id, c->device_name, c->device_token, len[2]);
    if (old)
        unlink_node(p, old);
    bool room = p->st.entries < p->max;
    if (room) {
        n->hnext = p->bucket[n->hash & p->mask];
        p->bucket[n->hash & p->mask] = n;
        n->prev = p->tail;
        *(p->tail ? &p->tail->next : &p->head) = n;
        p->tail = n;
        p->st.entries++;
    } else {
        p->st.refused++;
    }
    igw_unlock(&p->mu);
    free_list(dead);
    free(old);
    if (!room)
        free(n);
    return room ? 0 : -1;
refused:
    igw_lock(&p->mu);
    p->st.refused++;
    igw_unlock(&p->mu);
    return -1;
}

igw_pending_cmd *igw_pending_take(igw_pending *p, const char *product_id, const char *device_name, const char *token,
                                  size_t token_len, int64_t now_ms)
{
    uint64_t h = key_hash(product_id, device_name, token, token_len);
    node *dead = NULL;
    igw_lock(&p->mu);
    prune(p, now_ms, &dead);
    node *n = find(p, h, product_id, device_name, token, token_len);
    if (n)
        unlink_node(p, n);
    bool live = n && n->cmd.deadline_ms >= now_ms;
    if (live)
        p->st.hits++;
    else
        p->st.misses++;
    igw_unlock(&p->mu);
    free_list(dead);
    if (n && !live) {
        free(n);
        n = NULL;
    }
    return n ? &n->cmd : NULL;
}

void igw_pending_release(igw_pending_cmd *c)
{
    free(c); /* the node itself: cmd is its first member */
}

void igw_pending_stats_get(igw_pending *p, int64_t now_ms, igw_pending_stats *out)
{
    node *dead = NULL;
    igw_lock(&p->mu);
    prune(p, now_ms, &dead);
    *out = p->st;
    igw_unlock(&p->mu);
    free_list(dead);
}
