/* mux.h - one UDP socket for every ICE-lite peer of a media thread: STUN
 * checks answered here (stun.h) and sorted by the USERNAME's first half
 * (the peer's ufrag), everything else by the peer's selected address
 * (RFC 7983 demultiplexing, RFC 8445 2.5: a lite agent answers checks and
 * keeps the pair the controlling side nominates).
 *
 * Lives on one media thread: created on its GMainContext, driven and freed
 * there; callbacks run on it. peer.c puts every ICE-lite peer on its
 * thread's muxes (docs/decisions.md "One socket per media thread"). */
#ifndef IGW_MUX_H
#define IGW_MUX_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mediatypes.h"

typedef struct igw_mux igw_mux;
typedef struct igw_mux_peer igw_mux_peer;

/* A peer's callbacks. buf is writable, IGW_MUX_BUF bytes long (a packet is
 * decrypted in place). A callback may not free the peer or the mux. */
typedef struct igw_mux_ops {
    /* A check that passed (our ufrag, integrity with our pwd), answered.
     * `selected`: `from` is now the address media goes to and is taken
     * from: any passed check's until one carries USE-CANDIDATE, then the
     * nominated one's until another nomination. */
    void (*on_check)(void *ud, igw_mux_peer *mp, const struct sockaddr *from, socklen_t len, bool selected);
    /* A datagram that is not a check, from the selected address. */
    void (*on_data)(void *ud, uint8_t *buf, size_t len);
} igw_mux_ops;

#define IGW_MUX_BUF 1600
#define IGW_MUX_UFRAG_MAX 32 /* RFC 8839: 4..256 ice-chars; igw's own are short */
#define IGW_MUX_PWD_MAX 64

/* Binds `address` (an IP literal) on `port` (0: any) and attaches to ctx.
 * NULL + err. */
igw_mux *igw_mux_new(GMainContext *ctx, const char *address, uint16_t port, char *err, size_t errlen);
/* Detaches and closes; every peer must have been removed. */
void igw_mux_free(igw_mux *m);
/* The bound port (host order), and the address as given. */
uint16_t igw_mux_port(const igw_mux *m);
const char *igw_mux_address(const igw_mux *m);

/* A peer known by our `ufrag` (unique on the mux) and `pwd`. NULL when the
 * ufrag is taken or too long, or the pwd too long. */
igw_mux_peer *igw_mux_add(igw_mux *m, const char *ufrag, const char *pwd, const igw_mux_ops *ops, void *ud);
/* New local credentials (an ICE restart); the selected address stays until
 * a check with the new ones nominates another. 0, or -1 as igw_mux_add. */
int igw_mux_set_credentials(igw_mux_peer *p, const char *ufrag, const char *pwd);
/* Forgets the peer; nothing is delivered to it afterwards. */
void igw_mux_remove(igw_mux_peer *p);
/* Queues buf (copied) for the peer's selected address: 0, or -1 (none
 * selected yet, or longer than IGW_MUX_BUF). The queue leaves in one
 * sendmmsg when full or before the thread's loop polls again (it never
 * outlives the loop's turn); a full socket buffer drops, as UDP would,
 * counted in send_dropped. */
int igw_mux_send(igw_mux_peer *p, const uint8_t *buf, size_t len);

/* Counters since creation (the fields of igw_media_socket_stats, which
 * sums them over the threads); any thread (each a relaxed snapshot). */
typedef igw_media_socket_stats igw_mux_stats;
void igw_mux_stats_get(const igw_mux *m, igw_mux_stats *out);

#endif
