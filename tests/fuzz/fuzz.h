/* fuzz.h - what the libFuzzer harnesses share: the entry point's
 * declaration and REQUIRE, an invariant whose breach aborts with its text
 * (libFuzzer then keeps the input). */
#ifndef IGW_FUZZ_H
#define IGW_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                                     \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #c);   \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#endif
