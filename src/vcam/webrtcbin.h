/*
 * webrtcbin.h - what igw-vcam and the tests' GStreamer viewer
 * (tests/igwd/gst_viewer.c) both need around GStreamer's webrtcbin: the
 * elements checked up front, and ICE confined to one local address.
 *
 * Main-loop thread of the caller; no state of its own.
 */
#ifndef IGW_VCAM_WEBRTCBIN_H
#define IGW_VCAM_WEBRTCBIN_H

#include <stddef.h>

#include <gst/gst.h>

/* Checks that every element need[i][0] exists; each missing one is logged on
 * stderr as "<prog>: error: GStreamer element E is missing (Debian package
 * need[i][1])". 0, or -1 when any is missing. */
int igw_webrtcbin_check_elements(const char *prog, const char *const need[][2], size_t n);

/* Confines webrtcbin's libnice agent to `address` (an IP literal), UDP only,
 * no UPnP: without it libnice gathers on every non-loopback interface and
 * waits 200 ms for a UPnP gateway before gathering completes. Call before
 * the first offer starts gathering. 0, or -1 with err. */
int igw_webrtcbin_restrict_ice(GstElement *webrtc, const char *address, char *err, size_t errlen);

#endif
