/* ws.c - see ws.h.
 *
 * h2o 2.2.5's websocket glue (lib/websocket.c) drives wslay: it reads into
 * the wslay context, writes what wslay produces, and reports every complete
 * message (text, binary, ping, pong, close) and the end of the connection
 * (arg NULL) to one callback. Its rules, which this file works around:
 * - h2o_websocket_close frees the connection: it must never run inside
 *   h2o_websocket_proceed (which runs wslay, which runs our message
 *   callback). Only the end callback (arg NULL, h2o is done with it) and
 *   loop callbacks of our own (timers) may close.
 * - h2o_websocket_proceed must be called after queueing outside h2o's own
 *   callbacks, and not before the 101 went out (conn->sock is NULL until
 *   then; h2o calls proceed itself at that point). We defer it to a
 *   zero-delay timer ("kick"): sends never re-enter the caller, and a burst
 *   of sends is flushed in one pass.
 * - wslay sends control frames ahead of queued messages, so a close frame
 *   queued at once would cut queued messages; igw_ws_close waits (polling)
 *   until wslay's queue is empty, within close_timeout_ms.
 * - when wslay gives up reading (after a protocol error, a message too big,
 *   invalid UTF-8), h2o closes the socket right after the close frame; with
 *   unread bytes in the kernel that close becomes an RST, which may destroy
 *   the close frame at the client. We take the socket over instead, shut
 *   down its write side and discard input until EOF or close_timeout_ms.
 * - Debian's libh2o-evloop 2.2.5 closes the socket when the 101 cannot be
 *   written (upstream 2.2.5 source leaked it); nothing to do here. */
#include "http/ws.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <h2o.h>
#include <h2o/websocket.h>

#define DEFAULT_MAX_MESSAGE 4096
#define DEFAULT_MAX_QUEUED ((size_t)4 << 20)
#define DEFAULT_PING_MS 20000
#define DEFAULT_CLOSE_MS 5000
#define POLL_MS 20 /* close in progress: queue-drained and deadline checks */
/* What one queued message costs besides its payload (wslay's and malloc's
 * bookkeeping), charged against max_queued so that a queue of tiny frames
 * is bounded too. */
#define MSG_OVERHEAD 64

struct igw_ws_hub {
    h2o_evloop_t *loop;
    igw_ws_limits lim;
    h2o_timeout_t zero, ping, poll, linger;
    h2o_linklist_t conns;   /* igw_ws.link */
    h2o_linklist_t lingers; /* lingerer.link */
    size_t nconns, nlingers;
};

struct igw_ws {
    igw_ws_hub *hub; /* NULL: orphaned by igw_ws_hub_destroy before its 101 went out */
    h2o_websocket_conn_t *conn;
    igw_ws_handlers h;
    h2o_linklist_t link;
    h2o_timeout_entry_t timer; /* ping interval, or the close poll */
    h2o_timeout_entry_t kick;  /* deferred h2o_websocket_proceed */
    uint64_t close_deadline;
    const char *why;        /* set when we start closing */
    uint16_t close_code;    /* ours, 0 when we did not close */
    bool closing;           /* no more sends */
    bool close_pending;     /* our close frame waits for the queue to drain */
    bool alive;             /* something arrived since the last ping */
    uint8_t reason_len;
    char reason[123];
};

/* A socket whose WebSocket is over, drained until the peer's EOF. */
typedef struct lingerer {
    igw_ws_hub *hub;
    h2o_socket_t *sock;
    h2o_timeout_entry_t timer;
    h2o_linklist_t link;
} lingerer;

static void on_kick(h2o_timeout_entry_t *e);
static void on_ping(h2o_timeout_entry_t *e);
static void on_poll(h2o_timeout_entry_t *e);

/* ---- hub ------------------------------------------------------------------- */

igw_ws_hub *igw_ws_hub_create(struct st_h2o_evloop_t *loop, const igw_ws_limits *limits)
{
    igw_ws_hub *hub = calloc(1, sizeof *hub);
    if (!hub)
        return NULL;
    hub->loop = loop;
    if (limits)
        hub->lim = *limits;
    if (!hub->lim.max_message)
        hub->lim.max_message = DEFAULT_MAX_MESSAGE;
    if (!hub->lim.max_queued)
        hub->lim.max_queued = DEFAULT_MAX_QUEUED;
    if (hub->lim.max_queued < 1024)
        hub->lim.max_queued = 1024;
    if (!hub->lim.ping_interval_ms)
        hub->lim.ping_interval_ms = DEFAULT_PING_MS;
    if (!hub->lim.close_timeout_ms)
        hub->lim.close_timeout_ms = DEFAULT_CLOSE_MS;
    h2o_timeout_init(loop, &hub->zero, 0);
    h2o_timeout_init(loop, &hub->ping, hub->lim.ping_interval_ms);
    h2o_timeout_init(loop, &hub->poll, POLL_MS);
    h2o_timeout_init(loop, &hub->linger, hub->lim.close_timeout_ms);
    h2o_linklist_init_anchor(&hub->conns);
    h2o_linklist_init_anchor(&hub->lingers);
    return hub;
}

size_t igw_ws_hub_count(const igw_ws_hub *hub)
{
    return hub->nconns;
}

size_t igw_ws_hub_sockets(const igw_ws_hub *hub)
{
    return hub->nconns + hub->nlingers;
}

/* ---- lingering close --------------------------------------------------------- */

static void linger_end(lingerer *l)
{
    if (h2o_timeout_is_linked(&l->timer))
        h2o_timeout_unlink(&l->timer);
    h2o_linklist_unlink(&l->link);
    l->hub->nlingers--;
    h2o_socket_close(l->sock);
    free(l);
}

static void linger_on_read(h2o_socket_t *sock, const char *err)
{
    lingerer *l = sock->data;
    if (err) {
        linger_end(l);
        return;
    }
    h2o_buffer_consume(&sock->input, sock->input->size);
}

static void linger_on_timeout(h2o_timeout_entry_t *e)
{
    linger_end(H2O_STRUCT_FROM_MEMBER(lingerer, timer, e));
}

/* Takes over `sock` (no write in progress): FIN to the peer, then read and
 * discard until its EOF or the bound. Closes it at once when out of memory. */
static void linger_start(igw_ws_hub *hub, h2o_socket_t *sock)
{
    lingerer *l = calloc(1, sizeof *l);
    if (!l) {
        h2o_socket_close(sock);
        return;
    }
    l->hub = hub;
    l->sock = sock;
    l->timer.cb = linger_on_timeout;
    sock->data = l;
    (void)shutdown(h2o_socket_get_fd(sock), SHUT_WR);
    h2o_buffer_consume(&sock->input, sock->input->size);
    h2o_linklist_insert(&hub->lingers, &l->link);
    hub->nlingers++;
    h2o_timeout_link(hub->loop, &hub->linger, &l->timer);
    h2o_socket_read_start(sock, linger_on_read);
}

/* ---- the end of a connection ------------------------------------------------ */

static void detach(igw_ws *ws)
{
    if (h2o_timeout_is_linked(&ws->timer))
        h2o_timeout_unlink(&ws->timer);
    if (h2o_timeout_is_linked(&ws->kick))
        h2o_timeout_unlink(&ws->kick);
    if (ws->hub) {
        h2o_linklist_unlink(&ws->link);
        ws->hub->nconns--;
    }
}

/* The connection (h2o's, already closed) is gone: from here on the calls
 * on `ws` fail or do nothing, so on_close may still make them. */
static void notify_and_free(igw_ws *ws, igw_ws_hub *hub, uint16_t code, const char *why)
{
    ws->conn = NULL;
    ws->hub = NULL;
    ws->closing = true;
    if (hub && ws->h.on_close)
        ws->h.on_close(ws->h.arg, ws, code, why);
    free(ws);
}

/* Ends the connection now, from a loop callback of ours (not inside h2o's
 * websocket code): the socket is closed, nothing more is sent. */
static void drop(igw_ws *ws, uint16_t code, const char *why)
{
    igw_ws_hub *hub = ws->hub;
    detach(ws);
    h2o_websocket_close(ws->conn);
    notify_and_free(ws, hub, code, why);
}

static const char *wslay_why(uint16_t code)
{
    switch (code) {
    case 1002: return "protocol error";
    case 1007: return "invalid UTF-8";
    case 1009: return "message too big";
    default: return "closed by the protocol";
    }
}

/* h2o says the connection is over (from its own callbacks: it is done
 * with the connection, which we may free). */
static void on_end(igw_ws *ws)
{
    igw_ws_hub *hub = ws->hub;
    h2o_websocket_conn_t *conn = ws->conn;
    wslay_event_context_ptr ctx = conn->ws_ctx;
    bool received = wslay_event_get_close_received(ctx);
    bool sent = wslay_event_get_close_sent(ctx);
    uint16_t code = 1006;
    const char *why = "connection lost";
    if (!conn->sock) {
        why = "upgrade failed";
    } else if (received) {
        code = wslay_event_get_status_code_received(ctx);
        why = ws->close_code ? ws->why : "peer closed";
    } else if (sent) {
        code = wslay_event_get_status_code_sent(ctx);
        why = ws->close_code ? ws->why : wslay_why(code);
    } else if (ws->close_code) {
        code = ws->close_code;
        why = ws->why;
    }
    detach(ws);
    /* Our close frame went out but the peer's did not come: it may still be
     * sending, so close gracefully rather than with an RST. */
    if (hub && conn->sock && sent && !received && !h2o_socket_is_writing(conn->sock)) {
        h2o_socket_t *sock = conn->sock;
        conn->sock = NULL;
        h2o_websocket_close(conn);
        linger_start(hub, sock);
    } else {
        h2o_websocket_close(conn);
    }
    notify_and_free(ws, hub, code, why);
}

/* ---- sending ------------------------------------------------------------------- */

static bool opened(const igw_ws *ws)
{
    return ws->conn->sock != NULL;
}

static void queue_our_close(igw_ws *ws)
{
    ws->close_pending = false;
    (void)wslay_event_queue_close(ws->conn->ws_ctx, ws->close_code, (const uint8_t *)ws->reason, ws->reason_len);
}

/* Runs h2o's send/receive pass; may end (and free) the connection. */
static void flush(igw_ws *ws)
{
    if (ws->close_pending && wslay_event_get_queued_msg_count(ws->conn->ws_ctx) == 0)
        queue_our_close(ws);
    h2o_websocket_proceed(ws->conn);
}

static void schedule_kick(igw_ws *ws)
{
    if (ws->hub && opened(ws) && !h2o_timeout_is_linked(&ws->kick))
        h2o_timeout_link(ws->hub->loop, &ws->hub->zero, &ws->kick);
}

static void on_kick(h2o_timeout_entry_t *e)
{
    flush(H2O_STRUCT_FROM_MEMBER(igw_ws, kick, e));
}

/* Bounds the close: from now on, the poll replaces the ping. */
static void start_close_timer(igw_ws *ws)
{
    if (ws->timer.cb == on_poll)
        return;
    if (h2o_timeout_is_linked(&ws->timer))
        h2o_timeout_unlink(&ws->timer);
    ws->close_deadline = h2o_now(ws->hub->loop) + ws->hub->lim.close_timeout_ms;
    ws->timer.cb = on_poll;
    h2o_timeout_link(ws->hub->loop, &ws->hub->poll, &ws->timer);
}

static void close_with(igw_ws *ws, uint16_t code, const char *reason, const char *why)
{
    if (ws->closing || !ws->hub)
        return;
    ws->closing = true;
    ws->close_pending = true;
    ws->close_code = code;
    ws->why = why;
    size_t n = reason ? strlen(reason) : 0;
    if (n > sizeof ws->reason) {
        n = sizeof ws->reason;
        while (n > 0 && ((unsigned char)reason[n] & 0xC0) == 0x80)
            n--; /* do not cut a UTF-8 sequence */
    }
    if (n)
        memcpy(ws->reason, reason, n);
    ws->reason_len = (uint8_t)n;
    start_close_timer(ws);
    schedule_kick(ws);
}

void igw_ws_close(igw_ws *ws, uint16_t code, const char *reason)
{
    close_with(ws, code, reason, "closed");
}

bool igw_ws_closing(const igw_ws *ws)
{
    return ws->closing;
}

size_t igw_ws_queued(const igw_ws *ws)
{
    return ws->conn ? wslay_event_get_queued_msg_length(ws->conn->ws_ctx) : 0;
}

/* The send queue's charge against max_queued. */
static size_t queue_cost(const igw_ws *ws)
{
    wslay_event_context_ptr ctx = ws->conn->ws_ctx;
    return wslay_event_get_queued_msg_length(ctx) + MSG_OVERHEAD * wslay_event_get_queued_msg_count(ctx);
}

int igw_ws_send_text(igw_ws *ws, const char *data, size_t len)
{
    if (ws->closing || !ws->hub)
        return -1;
    size_t max = ws->hub->lim.max_queued;
    size_t cost = queue_cost(ws);
    if (len > max - MSG_OVERHEAD || cost > max - MSG_OVERHEAD - len) {
        close_with(ws, 1008, "slow consumer", "slow consumer");
        return -1;
    }
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)(len ? data : ""), len};
    if (wslay_event_queue_msg(ws->conn->ws_ctx, &m) != 0)
        return -1; /* wslay is closing (after a protocol error) or out of memory */
    schedule_kick(ws);
    return 0;
}

void igw_ws_hub_close_all(igw_ws_hub *hub, uint16_t code, const char *reason)
{
    for (h2o_linklist_t *n = hub->conns.next; n != &hub->conns; n = n->next)
        igw_ws_close(H2O_STRUCT_FROM_MEMBER(igw_ws, link, n), code, reason);
}

/* ---- timers ---------------------------------------------------------------------- */

static void on_ping(h2o_timeout_entry_t *e)
{
    igw_ws *ws = H2O_STRUCT_FROM_MEMBER(igw_ws, timer, e);
    if (opened(ws) && !ws->alive) {
        drop(ws, 1006, "ping timeout");
        return;
    }
    h2o_timeout_link(ws->hub->loop, &ws->hub->ping, &ws->timer);
    if (!opened(ws))
        return; /* the 101 is still being written */
    ws->alive = false;
    struct wslay_event_msg m = {WSLAY_PING, (const uint8_t *)"igw", 3};
    (void)wslay_event_queue_msg(ws->conn->ws_ctx, &m); /* fails only when closing or out of memory */
    flush(ws);
}

static void on_poll(h2o_timeout_entry_t *e)
{
    igw_ws *ws = H2O_STRUCT_FROM_MEMBER(igw_ws, timer, e);
    if (opened(ws) && h2o_now(ws->hub->loop) >= ws->close_deadline) {
        wslay_event_context_ptr ctx = ws->conn->ws_ctx;
        uint16_t code = wslay_event_get_close_received(ctx) ? wslay_event_get_status_code_received(ctx)
                        : ws->close_code                    ? ws->close_code
                                                            : 1006;
        drop(ws, code, "close timeout");
        return;
    }
    h2o_timeout_link(ws->hub->loop, &ws->hub->poll, &ws->timer);
    if (opened(ws) && ws->close_pending)
        flush(ws);
}

/* ---- receiving ------------------------------------------------------------------- */

/* Every complete message, and the end (arg NULL). Runs inside h2o's
 * websocket code: must not close the connection except at the end. */
static void on_event(h2o_websocket_conn_t *conn, const struct wslay_event_on_msg_recv_arg *arg)
{
    igw_ws *ws = conn->data;
    ws->conn = conn;
    if (!arg) {
        on_end(ws);
        return;
    }
    if (!ws->hub)
        return; /* orphaned: only waits for its end */
    ws->alive = true;
    switch (arg->opcode) {
    case WSLAY_TEXT_FRAME:
        if (!ws->closing && ws->h.on_message)
            ws->h.on_message(ws->h.arg, ws, arg->msg_length ? (const char *)arg->msg : "", arg->msg_length);
        break;
    case WSLAY_BINARY_FRAME:
        close_with(ws, 1003, "binary messages are not accepted", "binary message");
        break;
    case WSLAY_CONNECTION_CLOSE:
        /* wslay answers it (unless ours went first) and stops reading; the
         * end follows once the answer is written, within the bound. */
        ws->closing = true;
        ws->close_pending = false;
        start_close_timer(ws);
        break;
    case WSLAY_PING:
        /* wslay queued a pong. A peer that pings without reading would grow
         * the queue: past the bound, stop reading and close. */
        if (queue_cost(ws) > ws->hub->lim.max_queued) {
            close_with(ws, 1008, "slow consumer", "slow consumer");
            wslay_event_shutdown_read(conn->ws_ctx);
        }
        break;
    default: /* pong */
        break;
    }
}

/* ---- upgrade ------------------------------------------------------------------------ */

bool igw_ws_is_handshake(void *h2o_req)
{
    h2o_req_t *req = h2o_req;
    const char *key = NULL;
    if (req->version != 0x101) /* HTTP/1.1 only (h2o's upgrade is HTTP/1) */
        return false;
    if (h2o_is_websocket_handshake(req, &key) != 0 || key == NULL)
        return false;
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-version"), -1);
    if (i < 0)
        return false;
    h2o_iovec_t v = req->headers.entries[i].value;
    return v.len == 2 && memcmp(v.base, "13", 2) == 0;
}

igw_ws *igw_ws_upgrade(igw_ws_hub *hub, void *h2o_req, const igw_ws_handlers *handlers)
{
    h2o_req_t *req = h2o_req;
    const char *key = NULL;
    if (!igw_ws_is_handshake(req) || h2o_is_websocket_handshake(req, &key) != 0 || !key)
        return NULL;
    igw_ws *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->hub = hub;
    ws->h = *handlers;
    ws->h.protocol = NULL; /* not kept: the caller's string */
    ws->alive = true;
    ws->kick.cb = on_kick;
    ws->timer.cb = on_ping;
    if (handlers->protocol && *handlers->protocol) {
        h2o_iovec_t p = h2o_strdup(&req->pool, handlers->protocol, strlen(handlers->protocol));
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-protocol"), 0, NULL, p.base,
                              p.len);
    }
    /* Writes the 101; on_event(NULL) follows if that fails. */
    ws->conn = h2o_upgrade_to_websocket(req, key, ws, on_event);
    wslay_event_config_set_max_recv_msg_length(ws->conn->ws_ctx, hub->lim.max_message);
    h2o_linklist_insert(&hub->conns, &ws->link);
    hub->nconns++;
    h2o_timeout_link(hub->loop, &hub->ping, &ws->timer);
    return ws;
}

void igw_ws_hub_destroy(igw_ws_hub *hub)
{
    if (!hub)
        return;
    while (!h2o_linklist_is_empty(&hub->conns)) {
        igw_ws *ws = H2O_STRUCT_FROM_MEMBER(igw_ws, link, hub->conns.next);
        if (opened(ws)) {
            drop(ws, 1001, "hub destroyed");
            continue;
        }
        /* The 101 is still being written and h2o will report to this
         * connection: orphan it. It sends a close frame and ends as soon as
         * it opens; its end frees it. */
        detach(ws);
        ws->hub = NULL;
        ws->closing = true;
        (void)wslay_event_queue_close(ws->conn->ws_ctx, 1001, NULL, 0);
        wslay_event_shutdown_read(ws->conn->ws_ctx);
        if (ws->h.on_close)
            ws->h.on_close(ws->h.arg, ws, 1001, "hub destroyed");
    }
    while (!h2o_linklist_is_empty(&hub->lingers))
        linger_end(H2O_STRUCT_FROM_MEMBER(lingerer, link, hub->lingers.next));
    h2o_timeout_dispose(hub->loop, &hub->zero);
    h2o_timeout_dispose(hub->loop, &hub->ping);
    h2o_timeout_dispose(hub->loop, &hub->poll);
    h2o_timeout_dispose(hub->loop, &hub->linger);
    free(hub);
}
