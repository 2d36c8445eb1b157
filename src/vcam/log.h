/*
 * log.h - igw-vcam's one logger: a line on stderr, "vcam: " then the
 * part's prefix ("mqtt: ", "recorder: " or "") then the text. One write
 * per line: GStreamer's streaming threads and libmosquitto's network
 * thread log too. Any thread.
 */
#ifndef IGW_VCAM_LOG_H
#define IGW_VCAM_LOG_H

#include <glib.h>

void igw_vcam_log(const char *prefix, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#endif
