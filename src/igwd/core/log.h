/* log.h - igwd's diagnostics: one line per event on stderr.
 *
 * Levels error, warn, info, debug; lines below the minimum level are not
 * formatted at all. Two formats:
 *
 *   text  2025-06-01T12:00:00.123Z warn [3f2a9c0b1d4e5f60] results: reply t1 ...
 *   json  {"ts":"2025-06-01T12:00:00.123Z","level":"warn","id":"3f2a9c0b1d4e5f60","msg":"results: ..."}
 *
 * ts is RFC 3339 UTC with milliseconds, as in the access log; id is the
 * request id (the access log's "id", the x-request-id header) or another
 * correlation id, and is left out when there is none. Messages are bounded
 * (IGW_LOG_MSG_MAX bytes, then "..."), and so is the whole line
 * (IGW_LOG_LINE_MAX, at most PIPE_BUF on Linux: a line written to a pipe
 * never interleaves with another thread's). Text a client or device chose
 * cannot forge a line: in text, control characters (C0, DEL, C1, U+2028/9),
 * backslash and bytes that are not UTF-8 are written as escapes (\n, \\,
 * \xHH, \u2028); in JSON the message is a valid JSON string (bytes that are
 * not UTF-8 become the text \xHH).
 *
 * Thread-safety: igw_log and igw_log_write may be called from any thread;
 * each line is built on the caller's stack and written with one write(2),
 * no lock. igw_log_setup is called before other threads log (main, after
 * the settings are read); until then: info, text, fd 2.
 *
 * Never pass a secret to it: tokens, passwords, Authorization values, DSNs,
 * keys. Name the secret's owner (user id, device name) instead. */
#ifndef IGW_LOG_H
#define IGW_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_LOG_MSG_MAX 2048  /* message bytes before escaping */
#define IGW_LOG_LINE_MAX 4096 /* a whole line, newline included */
#define IGW_LOG_ID_MAX 64     /* id bytes kept */
#define IGW_LOG_TS_LEN 25     /* "YYYY-MM-DDTHH:MM:SS.mmmZ" and the NUL */

typedef enum igw_log_level { IGW_LOG_ERROR, IGW_LOG_WARN, IGW_LOG_INFO, IGW_LOG_DEBUG } igw_log_level;
typedef enum igw_log_format { IGW_LOG_TEXT, IGW_LOG_JSON } igw_log_format;

/* "error", "warn", "info", "debug" (the settings' spelling). */
const char *igw_log_level_name(igw_log_level level);

/* The settings' text to a level or format. 0, or -1 when `s` names none. */
int igw_log_level_parse(const char *s, igw_log_level *out);
int igw_log_format_parse(const char *s, igw_log_format *out);

/* Lines at `min` and more severe go to `fd` in `format`. Not thread-safe:
 * call it before other threads log. */
void igw_log_setup(igw_log_level min, igw_log_format format, int fd);

/* Whether a line at `level` would be written (to skip costly arguments). */
bool igw_log_enabled(igw_log_level level);

/* Formats and writes one line. `id`: the request or session id, NULL or ""
 * for none. errno is preserved. Failures to write are ignored (nowhere to
 * report them). */
void igw_log(igw_log_level level, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void igw_vlog(igw_log_level level, const char *id, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The line igw_log writes, without the level filter or the write: `msg`
 * (len bytes, any content) at `level`, time `wall_ms` (Unix milliseconds),
 * `truncated` when the caller already cut the message. Writes at most
 * IGW_LOG_LINE_MAX bytes (cap must be at least that), newline included, no
 * NUL; returns the length. For tests and igw_log. */
size_t igw_log_format_line(char *out, size_t cap, igw_log_format format, igw_log_level level, int64_t wall_ms,
                           const char *id, const char *msg, size_t len, bool truncated);

/* RFC 3339 UTC with milliseconds ("2025-06-01T12:00:00.123Z") into out. */
void igw_log_timestamp(int64_t wall_ms, char out[IGW_LOG_TS_LEN]);

/* Writes `len` bytes (a whole line, newline included) to the log's fd with
 * one write(2) (more only when the kernel takes part of it). 0, or -1. For
 * the access log, whose lines share the stream. */
int igw_log_write(const char *line, size_t len);

#endif
