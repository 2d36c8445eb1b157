/* arena.c - chunked bump allocator.
 *
 * Chunks form a list, newest first; allocations bump a cursor in the head
 * chunk. Standard chunks double from ARENA_CHUNK_MIN to ARENA_CHUNK_MAX so a
 * request of any size costs O(log n) mallocs. A request too big for a
 * standard chunk gets a dedicated chunk linked behind the head, so the space
 * left in the head stays usable. */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16u
#define ARENA_CHUNK_MIN ((size_t)4096)
#define ARENA_CHUNK_MAX ((size_t)1 << 20)
/* reset keeps the first chunk only up to this size: a request that once
 * needed a huge chunk must not pin that memory for the arena's lifetime */
#define ARENA_KEEP_MAX ((size_t)64 << 10)

struct igw_arena_chunk {
    igw_arena_chunk *next;
    size_t size; /* usable bytes in data[] */
    size_t used; /* bytes consumed in data[], alignment padding included */
    /* malloc may only guarantee 8-byte alignment, so the cursor is aligned
     * by address at each allocation rather than assumed from the header */
    unsigned char data[];
};

void igw_arena_init(igw_arena *a, size_t limit)
{
    a->head = NULL;
    a->total = 0;
    a->limit = limit;
}

/* Bytes needed in `c` to place `n` aligned bytes, or SIZE_MAX if they don't fit. */
static size_t chunk_need(const igw_arena_chunk *c, size_t n)
{
    uintptr_t cur = (uintptr_t)(c->data + c->used);
    size_t pad = (size_t)((ARENA_ALIGN - (cur & (ARENA_ALIGN - 1))) & (ARENA_ALIGN - 1));
    size_t room = c->size - c->used;
    if (pad > room || n > room - pad)
        return SIZE_MAX;
    return pad + n;
}

static igw_arena_chunk *chunk_new(size_t size)
{
    if (size > SIZE_MAX - sizeof(igw_arena_chunk))
        return NULL;
    igw_arena_chunk *c = malloc(sizeof(igw_arena_chunk) + size);
    if (c == NULL)
        return NULL;
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

void *igw_arena_alloc(igw_arena *a, size_t n)
{
    if (n == 0)
        n = 1; /* distinct, valid pointers even for empty requests */
    if (a->limit != 0 && (a->total > a->limit || n > a->limit - a->total))
        return NULL;
    /* worst case padding is ALIGN - 1 bytes */
    if (n > SIZE_MAX - sizeof(igw_arena_chunk) - ARENA_ALIGN)
        return NULL;

    igw_arena_chunk *c = a->head;
    size_t need = c != NULL ? chunk_need(c, n) : SIZE_MAX;
    if (need == SIZE_MAX) {
        size_t next = c != NULL ? c->size * 2 : ARENA_CHUNK_MIN;
        if (next < ARENA_CHUNK_MIN || next > ARENA_CHUNK_MAX)
            next = next < ARENA_CHUNK_MIN ? ARENA_CHUNK_MIN : ARENA_CHUNK_MAX;
        if (n + ARENA_ALIGN - 1 > next / 2 && c != NULL) {
            /* big request: a dedicated chunk behind the head */
            igw_arena_chunk *d = chunk_new(n + ARENA_ALIGN - 1);
            if (d == NULL)
                return NULL;
            d->next = c->next;
            c->next = d;
            c = d;
        } else {
            if (next < n + ARENA_ALIGN - 1)
                next = n + ARENA_ALIGN - 1;
            igw_arena_chunk *d = chunk_new(next);
            if (d == NULL)
                return NULL;
            d->next = c;
            a->head = d;
            c = d;
        }
        need = chunk_need(c, n);
        if (need == SIZE_MAX) /* cannot happen: sized for the worst padding */
            return NULL;
    }
    void *ptr = c->data + c->used + (need - n);
    c->used += need;
    a->total += n;
    return ptr;
}

char *igw_arena_strndup(igw_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX || (s == NULL && n != 0))
        return NULL;
    char *d = igw_arena_alloc(a, n + 1);
    if (d == NULL)
        return NULL;
    if (n != 0)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void igw_arena_reset(igw_arena *a)
{
    igw_arena_chunk *c = a->head, *first = NULL;
    while (c != NULL) {
        igw_arena_chunk *next = c->next;
        if (next == NULL && c->size <= ARENA_KEEP_MAX)
            first = c; /* the oldest chunk: kept for the next request */
        else
            free(c);
        c = next;
    }
    if (first != NULL)
        first->used = 0;
    a->head = first;
    a->total = 0;
}

void igw_arena_free(igw_arena *a)
{
    igw_arena_chunk *c = a->head;
    while (c != NULL) {
        igw_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
