/* forward.h - the media core's sources and viewers: negotiation, the packet
 * path, the per-viewer state (forward.c). The public calls (media.c) run
 * these on the node's media thread; each runs there. rc and err as the
 * public calls (media.h). */
#ifndef IGW_MEDIA_FORWARD_H
#define IGW_MEDIA_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

igw_media_rc igw_fwd_source_offer(igw_mthread *t, const char *id, uint32_t rev, const igw_sdp *offer, char *answer,
                                  size_t cap, char *err, size_t errlen);
igw_media_rc igw_fwd_source_rtp(igw_mthread *t, const char *id, const char *addr, uint16_t port, uint8_t video_pt,
                                const char *profile, uint8_t audio_pt, uint16_t *bound, char *err, size_t errlen);
igw_media_rc igw_fwd_viewer_offer(igw_node *source, const char *id, uint32_t rev, unsigned flags,
                                  const igw_sdp *offer, char *answer, size_t cap, char *err, size_t errlen);
igw_media_rc igw_fwd_viewer_make_offer(igw_node *source, const char *id, uint32_t rev, bool paused, char *offer,
                                       size_t cap, char *err, size_t errlen);
igw_media_rc igw_fwd_viewer_answer(igw_node *viewer, const igw_sdp *answer, char *err, size_t errlen);
igw_media_rc igw_fwd_viewer_track(igw_node *viewer, igw_media_kinds kinds, int trigger, int *state, char *err,
                                  size_t errlen);
igw_media_rc igw_fwd_viewer_publish(igw_node *viewer, bool allowed);
igw_media_rc igw_fwd_viewer_tap(igw_node *viewer, const char *addr, uint16_t port, bool on, char *err,
                                size_t errlen);
igw_media_rc igw_fwd_viewer_rtp(igw_node *source, const char *id, const char *addr, uint16_t port, char *err,
                                size_t errlen);
igw_media_rc igw_fwd_viewer_take(igw_node *viewer, char *err, size_t errlen);
void         igw_fwd_stats(const igw_node *n, igw_media_stats *out);

/* Closes a node now (viewers of a source too), queues "closed" with reason. */
void igw_fwd_close(igw_node *n, const char *reason);

/* Every ~100 ms on each thread. */
void igw_fwd_tick(igw_mthread *t, uint64_t now_us);

#endif
