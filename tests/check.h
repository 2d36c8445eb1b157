/* check.h - the C tests' check counter, one for all of them.
 *
 * CHECK(cond) or CHECK(cond, fmt, ...) counts a pass, or a failure printed
 * on stderr (unbuffered: nothing is lost or doubled when a test forks or
 * exits early) as "FAIL file:line: cond[: detail]". check() is the same
 * for a test's own helpers, which pass their caller's line and say what
 * they checked; it returns the outcome. A test ends with
 * `return check_summary("name");`: "name: P passed, F failed" on stdout,
 * and the exit status (1 when anything failed). */
#ifndef IGW_TESTS_CHECK_H
#define IGW_TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned passed, failed;

/* fmt NULL or "": no detail. No format attribute: CHECK passes "" when it
 * has no detail, which -Wformat-zero-length would refuse. */
static inline bool check(bool ok, const char *file, int line, const char *what, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return true;
    }
    failed++;
    fprintf(stderr, "FAIL %s:%d: %s", file, line, what);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    return false;
}
#define CHECK(cond, ...) check((cond), __FILE__, __LINE__, #cond, "" __VA_ARGS__)

static inline int check_summary(const char *name)
{
    printf("%s: %u passed, %u failed\n", name, passed, failed);
    return failed ? 1 : 0;
}

/* Test cases. A test split into cases lists them in a table
 *     static const struct { const char *name; void (*fn)(fixture *); } cases[] = {
 *         CHECK_CASE(test_one), CHECK_CASE(test_two), ...};
 * of `static void test_x(fixture *f)` functions and runs them in table
 * order with CHECK_RUN(cases, &f); cases without a fixture are a
 * `static const check_case cases[]` of `static void test_x(void)`, run
 * with CHECK_RUN_ALL(cases). After each case, "case NAME: ok" or
 * "case NAME: FAILED (N failed)" on stdout, flushed so that it follows
 * the case's FAIL lines; a failed check fails the test through
 * check_summary's exit status, as before. */
#define CHECK_CASE(fn) {#fn, fn}

/* Reports the case `name`, run since `failed` was failed_before; its outcome. */
static inline bool check_case_done(const char *name, unsigned failed_before)
{
    unsigned n = failed - failed_before;
    if (n)
        printf("case %s: FAILED (%u failed)\n", name, n);
    else
        printf("case %s: ok\n", name);
    fflush(stdout);
    return n == 0;
}

#define CHECK_RUN(cases, f)                                                  \
    do {                                                                     \
        for (size_t check_i_ = 0; check_i_ < sizeof(cases) / sizeof(cases)[0]; \
             check_i_++) {                                                   \
            unsigned check_before_ = failed;                                 \
            (cases)[check_i_].fn(f);                                         \
            check_case_done((cases)[check_i_].name, check_before_);          \
        }                                                                    \
    } while (0)

/* A case without a fixture. */
typedef struct check_case {
    const char *name;
    void (*fn)(void);
} check_case;

/* Runs cases[0..n) in order, reporting each as CHECK_RUN does. */
static inline void check_run(const check_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned before = failed;
        cases[i].fn();
        check_case_done(cases[i].name, before);
    }
}
#define CHECK_RUN_ALL(cases) check_run((cases), sizeof(cases) / sizeof(cases)[0])

#endif
