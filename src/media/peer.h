/* peer.h - one WebRTC transport: a libnice agent (one stream, one component:
 * BUNDLE + rtcp-mux), DTLS-SRTP over it, and the RFC 7983 demultiplexer.
 * Lives on one media thread: created, driven and freed there. */
#ifndef IGW_PEER_H
#define IGW_PEER_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtls.h"
#include "mediatypes.h"
#include "sdp.h"

typedef struct igw_peer igw_peer;

/* What a peer tells its owner; all called on the media thread. buf is the
 * decrypted packet in a writable buffer of IGW_PEER_BUF bytes. A callback may
 * not free the peer; on_failed's owner schedules that. */
typedef struct igw_peer_ops {
    void (*on_rtp)(void *ud, uint8_t *buf, size_t len);
    void (*on_rtcp)(void *ud, uint8_t *buf, size_t len);
    void (*on_event)(void *ud, igw_media_event_kind kind, const char *reason);
    void (*on_failed)(void *ud, igw_media_event_kind kind, const char *reason);
} igw_peer_ops;

#define IGW_PEER_BUF 1600 /* an MTU-sized packet plus the SRTP trailer */

struct igw_mux;

typedef struct igw_peer_config {
    GMainContext         *ctx;
    igw_dtls_cert        *cert;
    const igw_media_config *media;
    /* The thread's shared sockets (media->shared_socket, ICE-lite): the
     * peer is known on them by its ufrag instead of having an ICE agent and
     * sockets of its own. nmux 0: its own libnice agent. */
    struct igw_mux *const *mux;
    unsigned nmux;
} igw_peer_config;

/* A new transport with its local ICE credentials and host candidates gathered.
 * NULL + err. */
igw_peer *igw_peer_new(const igw_peer_config *cfg, const igw_peer_ops *ops, void *ud, char *err, size_t errlen);

/* Fills our side of a description: ICE credentials, lite flag, fingerprint,
 * setup (for an answer, from the remote offer's setup; for an offer, actpass),
 * and the candidates into section `media_index` (the first BUNDLE member). */
void igw_peer_describe(igw_peer *p, igw_sdp *local, size_t media_index, bool answering, igw_sdp_setup remote_setup);

/* Applies the remote description: credentials, candidates, fingerprint and
 * the DTLS role (we are the DTLS client when we said active). 0 or -1 + err. */
int igw_peer_set_remote(igw_peer *p, const igw_sdp *remote, char *err, size_t errlen);

/* Whether a new description from old's remote (its offer) continues its
 * DTLS association (an ICE restart: old connected, the same remote peer
 * connection by its o= session id, the same certificate, the same DTLS
 * role). */
bool igw_peer_continuable(const igw_peer *old, const igw_sdp *remote);

/* An ICE restart of a continuable peer (igw_peer_continuable) for the next
 * media generation: its sockets, candidates and local ICE credentials stay,
 * its DTLS association and SRTP keys go on, and media keeps flowing over the
 * selected pair until the remote's checks select another; it reports to ud
 * from now on, ICE and DTLS connected again at the remote's first media or
 * a newly selected pair. Then igw_peer_describe and igw_peer_set_remote as
 * for a new peer (set_remote takes the remote's new credentials only, and
 * its candidates in full mode). 0, or -1 + err (nothing changed). */
int igw_peer_restart(igw_peer *p, void *ud, char *err, size_t errlen);

/* Gives a restarted peer back to its earlier owner (the new generation
 * failed to start): it reports to ud again. */
void igw_peer_return(igw_peer *p, void *ud);

/* Protects an RTP/RTCP packet in place (buf has IGW_PEER_BUF bytes) and sends
 * it. 0, or -1 when not connected yet or the send failed. */
int igw_peer_send_rtp(igw_peer *p, uint8_t *buf, size_t len);
int igw_peer_send_rtcp(igw_peer *p, uint8_t *buf, size_t len);

/* Connected: DTLS done and SRTP keys installed. */
bool igw_peer_ready(const igw_peer *p);

/* Periodic check (called about every 100 ms): consent and connect timeouts.
 * Reports a failure through on_failed once. */
void igw_peer_tick(igw_peer *p, uint64_t now_us);

/* Sends close_notify when connected, detaches and frees. */
void igw_peer_free(igw_peer *p);

#endif
