/* arena.h - bump allocator for per-request scratch memory.
 *
 * Decoders put unescaped strings and nested values here so that a whole
 * request is released with one igw_arena_reset(); nothing is freed singly. */
#ifndef IGW_ARENA_H
#define IGW_ARENA_H

#include <stddef.h>

typedef struct igw_arena_chunk igw_arena_chunk;

typedef struct igw_arena {
    igw_arena_chunk *head; /* newest chunk first */
    size_t total;          /* bytes handed out since the last reset */
    size_t limit;          /* 0 = unlimited; allocation past it fails */
} igw_arena;

/* Prepares an empty arena; `limit` caps the bytes it may hand out (0: none). */
void igw_arena_init(igw_arena *a, size_t limit);

/* Returns `n` bytes aligned to 16, or NULL when out of memory or over limit. */
void *igw_arena_alloc(igw_arena *a, size_t n);

/* Copies `n` bytes into the arena and NUL-terminates the copy. */
char *igw_arena_strndup(igw_arena *a, const char *s, size_t n);

/* Releases everything but the first chunk, which is kept for reuse (unless
 * it is an oversized one, over 64 KiB, which is released too). */
void igw_arena_reset(igw_arena *a);

/* Releases all memory of the arena. */
void igw_arena_free(igw_arena *a);

#endif
