/* check.h - the igwd module tests' check counter: CHECK(cond) or
 * CHECK(cond, fmt, ...) counts a check; a failure is printed with its file,
 * line, condition and the optional detail. */
#ifndef IGW_TESTS_IGWD_CHECK_H
#define IGW_TESTS_IGWD_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int checks, failures;

static void check(bool ok, const char *file, int line, const char *what, const char *fmt, ...)
{
    checks++;
    if (ok)
        return;
    failures++;
    fprintf(stderr, "%s:%d: FAIL: %s", file, line, what);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}
#define CHECK(cond, ...) check((cond), __FILE__, __LINE__, #cond, "" __VA_ARGS__)

#endif
