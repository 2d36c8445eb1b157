/* bench_simdjson.h - the simdjson contender of bench_decode, in C++ behind a C API. */
#ifndef IGW_BENCH_SIMDJSON_H
#define IGW_BENCH_SIMDJSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sj_corpus sj_corpus;

/* Copies the n bodies into padded strings and sizes one reused dom::parser.
 * NULL on allocation failure. */
sj_corpus *sj_prepare(const char *const *bodies, const size_t *lens, size_t n);

/* Parses every body once; returns the index of the first one simdjson
 * refuses (with its error message in *msg), or n when all parse. */
size_t sj_check(sj_corpus *c, const char **msg);

/* Parses every body `iters` times (DOM, no validation); returns a checksum
 * of the parsed documents (root type and member count). */
uint64_t sj_run(sj_corpus *c, size_t iters);

/* Name of the simdjson kernel picked at run time (haswell, westmere, ...). */
const char *sj_implementation(void);

void sj_free(sj_corpus *c);

#ifdef __cplusplus
}
#endif

#endif
