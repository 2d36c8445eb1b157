/* ws.h - WebSocket connections (RFC 6455) on igwd's HTTP workers.
 *
 * Transport only: the caller authenticates the request, binds the
 * connection to whatever it serves (an endpoint's event stream) and feeds
 * it frames. Built on h2o 2.2.5's websocket support (h2o/websocket.h, which
 * frames with wslay: masking, fragment reassembly, UTF-8 validation of text
 * frames, ping → pong, the close handshake).
 *
 * Threading: a hub belongs to one worker's event loop; every function here
 * runs on that loop's thread. Callbacks run from the loop, never from inside
 * igw_ws_upgrade / igw_ws_send_text / igw_ws_close, so a callback may call
 * any function here except igw_ws_hub_destroy.
 *
 * Policy (per hub, igw_ws_limits):
 * - client messages are text only: a binary message closes with 1003, a
 *   message (after reassembly) over max_message with 1009, invalid UTF-8
 *   with 1007, a protocol error (unmasked frame, bad opcode, RSV bits, a
 *   control frame over 125 bytes) with 1002;
 * - a ping every ping_interval_ms; a connection from which nothing at all
 *   (pong or any other frame) arrived during a whole interval is dropped:
 *   a dead client is released within two intervals;
 * - the send queue is bounded by max_queued, each message counting its
 *   length plus 64 bytes: a send beyond it fails and closes the connection
 *   with 1008 (slow consumer), so one message is at most max_queued - 64
 *   bytes (1 MiB messages pass the default). Pongs count too: a peer that
 *   pings without reading is closed the same way. On top of the queue, h2o
 *   holds at most one message being written;
 * - after our close frame, the peer has close_timeout_ms to answer it (and
 *   to read what was queued before it), then the socket is dropped.
 *
 * h2o's headers are included by ws.c only. */
#ifndef IGW_WS_H
#define IGW_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct st_h2o_evloop_t;

typedef struct igw_ws igw_ws;         /* one upgraded connection */
typedef struct igw_ws_hub igw_ws_hub; /* a worker loop's connections, timers and limits */

typedef struct igw_ws_limits {
    size_t max_message;        /* largest client message, bytes; 0: 4096 */
    size_t max_queued;         /* send queue bound per connection, bytes; 0: 4 MiB */
    uint32_t ping_interval_ms; /* 0: 20000 */
    uint32_t close_timeout_ms; /* 0: 5000 */
} igw_ws_limits;

typedef struct igw_ws_handlers {
    /* One complete client text message (valid UTF-8, not NUL-terminated,
     * valid during the call only). NULL: messages are ignored. */
    void (*on_message)(void *arg, igw_ws *ws, const char *data, size_t len);
    /* Called exactly once, when the connection is over (peer close,
     * igw_ws_close, a limit, an I/O error, a dead peer, the hub destroyed);
     * the igw_ws is invalid once it returns. code: the peer's close code if
     * it sent one (1005 when its close frame had none), else the code we
     * closed with, else 1006; why: a short static description for logs. */
    void (*on_close)(void *arg, igw_ws *ws, uint16_t code, const char *why);
    void *arg;
    /* Sec-WebSocket-Protocol to answer with (one the client offered), or NULL. */
    const char *protocol;
} igw_ws_handlers;

/* A hub for the loop; limits NULL or fields 0 take the defaults. NULL when
 * out of memory. */
igw_ws_hub *igw_ws_hub_create(struct st_h2o_evloop_t *loop, const igw_ws_limits *limits);

/* Connections of the hub not yet over (on_close not yet called). */
size_t igw_ws_hub_count(const igw_ws_hub *hub);

/* Sockets still held: live connections plus closed ones that are draining
 * what the peer still sends (bounded by close_timeout_ms). */
size_t igw_ws_hub_sockets(const igw_ws_hub *hub);

/* igw_ws_close on every connection (shutdown: 1001 "going away"). */
void igw_ws_hub_close_all(igw_ws_hub *hub, uint16_t code, const char *reason);

/* Drops every connection (on_close runs for those not over yet) and frees
 * the hub. Call on the loop's thread, outside the hub's callbacks, before
 * the loop is destroyed; best after close_all and running the loop until
 * igw_ws_hub_sockets is 0. NULL is a no-op. */
void igw_ws_hub_destroy(igw_ws_hub *hub);

/* True when the h2o request (h2o_req_t *) is a WebSocket handshake this
 * module accepts: HTTP/1.1 GET with Connection: upgrade, Upgrade: websocket,
 * a 24-character Sec-WebSocket-Key and Sec-WebSocket-Version: 13. */
bool igw_ws_is_handshake(void *h2o_req);

/* Answers the request (h2o_req_t *, from an h2o handler, before any other
 * answer) with 101 Switching Protocols and takes the connection over. NULL,
 * with the request untouched, when it is not a handshake
 * (igw_ws_is_handshake) or out of memory: the caller answers it (400).
 * The handlers are copied. Frames may be sent at once: they go out after
 * the 101. */
igw_ws *igw_ws_upgrade(igw_ws_hub *hub, void *h2o_req, const igw_ws_handlers *handlers);

/* Queues one text frame (`data` must be valid UTF-8; copied). 0, or -1 when
 * the connection is closing or over, or out of memory, or when it would
 * exceed max_queued: the connection is then closed with 1008. */
int igw_ws_send_text(igw_ws *ws, const char *data, size_t len);

/* Bytes queued and not yet handed to the socket. */
size_t igw_ws_queued(const igw_ws *ws);

/* True once closing started (a close frame queued or received); sends fail. */
bool igw_ws_closing(const igw_ws *ws);

/* Starts the close handshake: what is queued goes first, then a close frame
 * with `code` (1000-4999) and `reason` (UTF-8, cut to 123 bytes; NULL for
 * none); on_close follows (at the latest close_timeout_ms later). No-op when
 * already closing. */
void igw_ws_close(igw_ws *ws, uint16_t code, const char *reason);

#endif
