/* media.h - the media core: a WebRTC forwarding unit.
 *
 * A source (a camera publishing H264 video and Opus audio over WebRTC) fans
 * out to viewers, each in its own WebRTC session (ICE by libnice, DTLS 1.2 by
 * OpenSSL, SRTP by libsrtp2). Every source and its viewers live on one media
 * thread (a GLib main context), and packets are forwarded on the thread that
 * received them: no per-packet cross-thread queue. See docs/media.md.
 *
 * Peers are named by the caller (ids of at most IGW_MEDIA_ID_MAX bytes) and
 * carry a mediaRevision: an offer must name a newer revision than the peer
 * it replaces (it then replaces it: a new generation), an answer or a track
 * operation the peer's current one; anything else is refused and changes
 * nothing.
 *
 * The functions below may be called from any thread except a media thread;
 * each runs its work on the owning media thread and waits for it (no network
 * wait: host candidates are gathered locally), so it returns in well under a
 * millisecond. Outcomes that happen later (ICE, DTLS, first packet, failure)
 * arrive as events on a queue with a pollable file descriptor. */
#ifndef IGW_MEDIA_H
#define IGW_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mediatypes.h" /* the types the calls take and return: ids, config, results, stats, events */

/* The defaults: 1 thread, loopback, ICE-lite, consent 10 s, connect 20 s, PLI 1 s. */
void igw_media_config_defaults(igw_media_config *c);

/* Starts the media threads and makes the process certificate. NULL + err. */
igw_media *igw_media_new(const igw_media_config *cfg, char *err, size_t errlen);

/* Closes every peer (their events are discarded) and stops the threads. No
 * other call may run during or after it. */
void igw_media_free(igw_media *m);

/* SHA-256 fingerprint of the process certificate, SDP form. */
const char *igw_media_fingerprint(const igw_media *m);

/* ---- sources ---- */

/* A source from a camera's offer (sendonly or sendrecv H264 and/or Opus).
 * Writes our answer into answer[0..cap). A newer revision for an existing id
 * replaces the source and closes its viewers. */
igw_media_rc igw_media_source_offer(igw_media *m, const char *source_id, uint32_t revision, const char *offer,
                                    size_t len, char *answer, size_t cap, char *err, size_t errlen);

/* A source fed plain RTP over UDP (no ICE/DTLS/SRTP): binds addr:port (port 0
 * = any; the bound port is returned in *bound). Payload types: H264 `video_pt`
 * (0 = none) with profile-level-id `h264_profile` (NULL = 42e01f), Opus
 * `audio_pt` (0 = none). Used for benchmarks and RTSP-style feeds. */
igw_media_rc igw_media_source_rtp(igw_media *m, const char *source_id, const char *addr, uint16_t port,
                                  uint8_t video_pt, const char *h264_profile, uint8_t audio_pt,
                                  uint16_t *bound, char *err, size_t errlen);

/* ---- viewers ---- */

/* What a viewer may do: igw_media_viewer_offer's flags (IGW_MEDIA_VIEWER_*, mediatypes.h). */

/* A viewer of source_id from the viewer's offer (recvonly audio/video; with
 * IGW_MEDIA_VIEWER_PUBLISH its audio may send too). An offer that sends
 * audio without that flag is refused (EINVAL), whatever the source carries:
 * what a viewer may send is its caller's decision, never the source's.
 * Every offered track the source can serve starts `active` (machine
 * trigger start), or `paused` with IGW_MEDIA_VIEWER_PAUSED. Writes the
 * answer. A newer revision of an existing viewer of the same source is its
 * next generation: each of its tracks keeps the earlier one's state; from
 * the same remote peer connection (its o= session id, certificate and DTLS
 * role: an ICE restart) it takes the earlier transport over, DTLS and SRTP
 * going on, our ICE credentials kept, and the same outgoing streams (SSRC,
 * sequence, timestamps); otherwise it has its own. The publish gate starts
 * closed either way. */
igw_media_rc igw_media_viewer_offer(igw_media *m, const char *source_id, const char *viewer_id, uint32_t revision,
                                    unsigned flags, const char *offer, size_t len, char *answer, size_t cap,
                                    char *err, size_t errlen);

/* The platform offers first: writes an offer (sendonly tracks of the source)
 * for a new viewer; the viewer's answer goes to igw_media_viewer_answer. */
igw_media_rc igw_media_viewer_make_offer(igw_media *m, const char *source_id, const char *viewer_id,
                                         uint32_t revision, bool start_paused, char *offer, size_t cap,
                                         char *err, size_t errlen);
igw_media_rc igw_media_viewer_answer(igw_media *m, const char *viewer_id, uint32_t revision, const char *answer,
                                     size_t len, char *err, size_t errlen);

/* Fires a track-subscription trigger (generated machine `track`: pause,
 * resume, unsubscribe, subscribe) on the viewer's tracks of the given kinds.
 * All named tracks move or none does. Subscribe and resume ask the source for
 * a keyframe and restart the viewer's video at one. Pause and unsubscribe
 * return after the media thread applied them: nothing of those kinds is sent
 * to the viewer after the return, retransmissions of earlier packets included
 * (its NACKs are counted in dropped). *state (optional) gets the resulting
 * igw_track_state of the first named track. */
igw_media_rc igw_media_viewer_track(igw_media *m, const char *viewer_id, uint32_t revision, igw_media_kinds kinds,
                                    int trigger, int *state, char *err, size_t errlen);

/* Talk: the gate on a viewer's audio toward its source's speaker. A source
 * whose camera offered audio sendrecv or recvonly has a talkback (one Opus
 * stream from us to the camera); a viewer whose offer sends audio to such a
 * source publishes. Every viewer starts not allowed. While allowed, its audio
 * is forwarded to the talkback when it holds the floor (one talker at a time:
 * docs/media.md); set to false, forwarding stops from its next packet: the
 * call returns after the media thread applied it, so no packet received after
 * the return is forwarded. What the viewer receives never changes with the
 * gate. Allowed on a viewer that does not publish is kept and does nothing.
 * revision must be the viewer's current one. */
igw_media_rc igw_media_viewer_publish(igw_media *m, const char *viewer_id, uint32_t revision, bool allowed, char *err,
                                      size_t errlen);

/* The side conversation of a viewer offered with IGW_MEDIA_VIEWER_SIDE (the
 * AI session: the user talks with an assistant, not with the camera). Its
 * audio does not touch the source: an audio section it sends on (at most
 * one) is taken whatever the source has, and what arrives there goes, as
 * plain RTP stripped of extensions, to the tap while the publish gate is
 * open (igw_media_viewer_publish; closed at first); an audio section it
 * receives on (at most one, it may be the same sendrecv section) is fed
 * from the viewer's own loopback UDP port (igw_media_stats.side_port):
 * plain Opus RTP arriving there is renumbered onto the viewer's stream.
 * Video comes from the source as for any viewer. The port and the tap
 * carry over to the viewer's next generation.
 *
 * Or the interpreter of a viewer that publishes to the source's talkback
 * (talk): its first tap opens its loopback port; while it has a tap, what
 * it publishes goes to the taps instead of the talkback, and the plain Opus
 * RTP arriving on the port goes to the talkback in its place (the viewer's
 * gate and the talk floor as for its own voice). Without a tap its own
 * voice goes to the talkback again.
 *
 * Adds (on) or removes (!on) a tap: where its published audio goes, at most
 * IGW_MEDIA_TAPS_MAX (each gets every packet); addr NULL with !on removes
 * every tap. A side conversation without a tap counts its packets as gated.
 * EINVAL for a viewer with neither. revision must be the viewer's current
 * one. */
igw_media_rc igw_media_viewer_tap(igw_media *m, const char *viewer_id, uint32_t revision, const char *addr,
                                  uint16_t port, bool on, char *err, size_t errlen);

/* A plain-RTP viewer of source_id's video (a processor's eyes): no ICE,
 * DTLS or SRTP; its packets go from a socket of its own to addr:port. Its
 * video starts paused and stays so but for its takes. Revision 1. */
igw_media_rc igw_media_viewer_rtp(igw_media *m, const char *source_id, const char *viewer_id, const char *addr,
                                  uint16_t port, char *err, size_t errlen);

/* A frame take of a plain-RTP viewer: its video resumes at the source's
 * next keyframe (asked for now) and is paused again right after that
 * frame's last packet (the marker bit), so exactly one frame goes out;
 * then IGW_MEDIA_EV_FRAME with its RTP timestamp. A pause (trackControl)
 * before it cancels the take. */
igw_media_rc igw_media_viewer_take(igw_media *m, const char *viewer_id, char *err, size_t errlen);

/* Closes a source (and its viewers) or a viewer. */
igw_media_rc igw_media_close(igw_media *m, const char *id, const char *reason);

/* ---- observation ---- */

igw_media_rc igw_media_get_stats(igw_media *m, const char *id, igw_media_stats *out);

/* The shared sockets' counters, summed over the threads (all zero without
 * them). Any thread, between igw_media_new and igw_media_free; never
 * waits for a media thread. */
void igw_media_socket_stats_get(igw_media *m, igw_media_socket_stats *out);

/* Readable (an eventfd) while events are queued: wrap it in the caller's loop. */
int igw_media_event_fd(igw_media *m);

/* Takes the oldest event; false when none. The queue keeps at most 65536
 * events; beyond that the oldest are dropped and counted. */
bool igw_media_event_next(igw_media *m, igw_media_event *ev);

/* Name of an event kind ("ice-connected", ...). */
const char *igw_media_event_name(igw_media_event_kind kind);

#endif
