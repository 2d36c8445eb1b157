/* check.h - the unit tests' check counter. CHECK(cond) counts a pass, or a
 * failure printed with its file, line and condition; a test ends by printing
 * passed/failed and exiting non-zero when failed > 0. */
#ifndef IGW_TESTS_CHECK_H
#define IGW_TESTS_CHECK_H

#include <stdio.h>

static unsigned passed, failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failed++;                                                                \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
        }                                                                            \
    } while (0)

#endif
