/* ws_test.c - a bare h2o server around igw_ws (src/igwd/ws.c), driven by
 * tests/igwd/ws_client.mjs (see ws_test.sh).
 *
 * usage: ws_test PING_MS CLOSE_MS. One evloop thread on 127.0.0.1, an
 * ephemeral port printed as "port N" on stdout. Limits: 4096-byte client
 * messages, 2 MiB send queue. Routes:
 *   /ws/echo        upgrade; each text message is a command or echoed:
 *                   "push N" N event frames; "big N" one N-byte frame;
 *                   "pushclose N CODE" N frames then close CODE "bye";
 *                   "flood" 64 KiB frames until the queue bound refuses
 *                   one; "flood-slow" the same from a timer, 16 frames a
 *                   millisecond (for a stalled client)
 *   /ws/push?n=N    upgrade and push N frames at once (before the 101 is out)
 *   /ws/doomed      upgrade on a second hub, destroyed at /quit with it open
 *   /ws/orphan      upgrade on a fresh hub destroyed at once, before the
 *                   101 is out (the connection must still close itself: 1001)
 *   /ws/...         not a handshake: 400
 *   /stats          {"opened","closed","open","sockets","conns","flood","log":[{id,code,why}]}
 *   /quit           stop: close the rest with 1001, drain, check, exit
 * On its own side it checks that on_close runs exactly once per connection
 * and that sends fail from then on, and that everything drained. Prints
 * "ws_test: N connections" and "ws_test: P passed, F failed"; exits 1 on failure. */
#include "clock.h"
#include "http/ws.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>

#include "../check.h"

#define FRAME_64K 65536
#define MAX_LOG 512

static h2o_globalconf_t globalconf;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;
static h2o_evloop_t *loop;
static igw_ws_hub *hub, *hub2;
static igw_ws_limits lim;
static h2o_timeout_t flood_timeout;
static size_t nconns;
static int opened, closed, last_flood = -1;
static bool quit;
static char *pad64k;

static struct {
    int id;
    unsigned code;
    char why[40];
} closelog[MAX_LOG];

typedef struct conn_rec {
    int id;
    igw_ws *ws;
    bool closed;
    int flooded;
    h2o_timeout_entry_t flood;
} conn_rec;

/* ---- pushes --------------------------------------------------------------- */

static int push_events(igw_ws *ws, int n)
{
    char buf[160];
    for (int i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf,
                           "{\"type\":\"interaction.event\",\"deliveryId\":\"d%06d\",\"event\":{\"seq\":%d,\"text\":\"h\\u00e9\"}}",
                           i, i);
        if (igw_ws_send_text(ws, buf, (size_t)len))
            return -1;
    }
    return 0;
}

/* 64 KiB frames until the bound refuses one; the number accepted. */
static int flood_some(conn_rec *r, int max)
{
    int n = 0;
    while (n < max && igw_ws_send_text(r->ws, pad64k, FRAME_64K) == 0)
        n++;
    r->flooded += n;
    return n == max ? 0 : -1;
}

static void on_flood_tick(h2o_timeout_entry_t *e)
{
    conn_rec *r = H2O_STRUCT_FROM_MEMBER(conn_rec, flood, e);
    if (flood_some(r, 16) == 0) {
        h2o_timeout_link(loop, &flood_timeout, &r->flood);
        return;
    }
    last_flood = r->flooded;
    CHECK(igw_ws_closing(r->ws));
    CHECK(igw_ws_send_text(r->ws, "x", 1) == -1);
}

/* ---- connection callbacks ----------------------------------------------------- */

static bool starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static void on_message(void *arg, igw_ws *ws, const char *data, size_t len)
{
    conn_rec *r = arg;
    CHECK(ws == r->ws);
    char cmd[64];
    if (len < sizeof cmd) {
        memcpy(cmd, data, len);
        cmd[len] = '\0';
    } else {
        cmd[0] = '\0';
    }
    int n = 0, code = 0;
    if (starts(data, len, "push ") && sscanf(cmd, "push %d", &n) == 1) {
        (void)push_events(ws, n);
    } else if (starts(data, len, "pushclose ") && sscanf(cmd, "pushclose %d %d", &n, &code) == 2) {
        CHECK(push_events(ws, n) == 0);
        igw_ws_close(ws, (uint16_t)code, "bye");
        CHECK(igw_ws_closing(ws));
        CHECK(igw_ws_send_text(ws, "late", 4) == -1);
        igw_ws_close(ws, 1000, "again"); /* no-op */
    } else if (starts(data, len, "big ") && sscanf(cmd, "big %d", &n) == 1 && n > 0) {
        char *b = malloc((size_t)n);
        if (!b) {
            CHECK(!"out of memory");
            return;
        }
        memset(b, 'x', (size_t)n);
        (void)igw_ws_send_text(ws, b, (size_t)n);
        free(b);
    } else if (len == 5 && memcmp(data, "flood", 5) == 0) {
        CHECK(flood_some(r, 1 << 20) == -1);
        last_flood = r->flooded;
        CHECK(igw_ws_closing(ws));
        CHECK(igw_ws_queued(ws) <= ((size_t)2 << 20));
    } else if (len == 10 && memcmp(data, "flood-slow", 10) == 0) {
        if (!h2o_timeout_is_linked(&r->flood))
            h2o_timeout_link(loop, &flood_timeout, &r->flood);
    } else {
        CHECK(igw_ws_send_text(ws, data, len) == 0);
    }
}

static void on_close(void *arg, igw_ws *ws, uint16_t code, const char *why)
{
    conn_rec *r = arg;
    CHECK(ws == r->ws);
    CHECK(!r->closed);
    r->closed = true;
    CHECK(igw_ws_closing(ws));
    CHECK(igw_ws_send_text(ws, "x", 1) == -1);
    igw_ws_close(ws, 1000, NULL); /* no-op */
    if (h2o_timeout_is_linked(&r->flood))
        h2o_timeout_unlink(&r->flood);
    if (closed < MAX_LOG) {
        closelog[closed].id = r->id;
        closelog[closed].code = code;
        snprintf(closelog[closed].why, sizeof closelog[closed].why, "%s", why ? why : "");
    }
    closed++;
    free(r);
}

/* ---- HTTP ------------------------------------------------------------------------ */

static void reply(h2o_req_t *req, int status, const char *reason, const char *ctype, const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = reason;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
    req->res.content_length = len;
    h2o_send_inline(req, body, len);
}

static void serve_stats(h2o_req_t *req)
{
    size_t cap = 256 + (size_t)(closed < MAX_LOG ? closed : MAX_LOG) * 96;
    char *b = h2o_mem_alloc_pool(&req->pool, cap);
    size_t n = (size_t)snprintf(b, cap,
                                "{\"opened\":%d,\"closed\":%d,\"open\":%zu,\"sockets\":%zu,\"conns\":%zu,\"flood\":%d,\"log\":[",
                                opened, closed, igw_ws_hub_count(hub), igw_ws_hub_sockets(hub), nconns, last_flood);
    for (int i = 0; i < closed && i < MAX_LOG; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s{\"id\":%d,\"code\":%u,\"why\":\"%s\"}", i ? "," : "", closelog[i].id,
                              closelog[i].code, closelog[i].why);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    reply(req, 200, "OK", "application/json", b, n);
}

static bool path_is(h2o_iovec_t path, const char *lit)
{
    size_t n = strlen(lit);
    return path.len == n && memcmp(path.base, lit, n) == 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    size_t plen = req->input.query_at != SIZE_MAX ? req->input.query_at : req->input.path.len;
    h2o_iovec_t path = h2o_iovec_init(req->input.path.base, plen);
    if (path_is(path, "/stats")) {
        serve_stats(req);
        return 0;
    }
    if (path_is(path, "/quit")) {
        quit = true;
        reply(req, 200, "OK", "text/plain", "bye\n", 4);
        return 0;
    }
    if (path.len < 4 || memcmp(path.base, "/ws/", 4) != 0) {
        reply(req, 404, "Not Found", "text/plain", "not found\n", 10);
        return 0;
    }
    bool push = path_is(path, "/ws/push"), doomed = path_is(path, "/ws/doomed"), orphan = path_is(path, "/ws/orphan");
    if (!push && !doomed && !orphan && !path_is(path, "/ws/echo")) {
        reply(req, 404, "Not Found", "text/plain", "not found\n", 10);
        return 0;
    }
    bool hs = igw_ws_is_handshake(req);
    conn_rec *r = calloc(1, sizeof *r);
    if (!r) {
        reply(req, 500, "Internal Server Error", "text/plain", "oom\n", 4);
        return 0;
    }
    r->id = opened + 1;
    r->flood.cb = on_flood_tick;
    const char *proto = NULL;
    ssize_t pi = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-protocol"), -1);
    if (pi >= 0 && h2o_contains_token(req->headers.entries[pi].value.base, req->headers.entries[pi].value.len,
                                       H2O_STRLIT("igw.v1"), ','))
        proto = "igw.v1";
    igw_ws_handlers h = {.on_message = on_message, .on_close = on_close, .arg = r, .protocol = proto};
    igw_ws_hub *on = doomed ? hub2 : hub;
    if (orphan && !(on = igw_ws_hub_create(loop, &lim))) {
        free(r);
        reply(req, 500, "Internal Server Error", "text/plain", "oom\n", 4);
        return 0;
    }
    igw_ws *ws = igw_ws_upgrade(on, req, &h);
    CHECK((ws != NULL) == hs);
    if (!ws) {
        free(r);
        if (orphan)
            igw_ws_hub_destroy(on);
        reply(req, 400, "Bad Request", "text/plain", "not a websocket handshake\n", 26);
        return 0;
    }
    r->ws = ws;
    opened++;
    if (orphan) {
        int before = closed;
        igw_ws_hub_destroy(on); /* the 101 is not written yet: r is freed by on_close */
        CHECK(closed == before + 1);
        CHECK(strcmp(closelog[before].why, "hub destroyed") == 0);
        return 0;
    }
    if (push) {
        int n = 0;
        if (req->input.query_at != SIZE_MAX) {
            char q[32];
            size_t ql = req->input.path.len - req->input.query_at;
            if (ql < sizeof q) {
                memcpy(q, req->input.path.base + req->input.query_at, ql);
                q[ql] = '\0';
                (void)sscanf(q, "?n=%d", &n);
            }
        }
        CHECK(push_events(ws, n) == 0);
    }
    return 0;
}

/* ---- server ------------------------------------------------------------------------ */

static void on_conn_close(void *data)
{
    (void)data;
    nconns--;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    if (err)
        return;
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (!sock)
        return;
    nconns++;
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = NULL;
    h2o_accept(&accept_ctx, sock);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ws_test PING_MS CLOSE_MS\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    lim = (igw_ws_limits){.max_message = 4096,
                          .max_queued = (size_t)2 << 20,
                          .ping_interval_ms = (uint32_t)atoi(argv[1]),
                          .close_timeout_ms = (uint32_t)atoi(argv[2])};
    pad64k = malloc(FRAME_64K);
    if (!pad64k)
        return 1;
    memset(pad64k, 'p', FRAME_64K);

    h2o_config_init(&globalconf);
    globalconf.server_name = h2o_iovec_init(H2O_STRLIT("ws_test"));
    h2o_hostconf_t *host = h2o_config_register_host(&globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof *handler);
    handler->on_req = on_req;
    loop = h2o_evloop_create();
    h2o_context_init(&ctx, loop, &globalconf);
    accept_ctx.ctx = &ctx;
    accept_ctx.hosts = globalconf.hosts;
    h2o_timeout_init(loop, &flood_timeout, 1);

    /* Defaults apply for zero fields; a hub without connections is inert. */
    igw_ws_hub *idle = igw_ws_hub_create(loop, NULL);
    CHECK(idle && igw_ws_hub_count(idle) == 0 && igw_ws_hub_sockets(idle) == 0);
    igw_ws_hub_destroy(idle);
    igw_ws_hub_destroy(NULL);
    hub = igw_ws_hub_create(loop, &lim);
    hub2 = igw_ws_hub_create(loop, &lim);
    CHECK(hub != NULL && hub2 != NULL);

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl)) {
        perror("ws_test: listen");
        return 1;
    }
    h2o_socket_t *listener = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(listener, on_accept);
    printf("port %u\n", (unsigned)ntohs(sa.sin_port));
    fflush(stdout);

    while (!quit)
        h2o_evloop_run(loop, INT32_MAX);

    /* Shutdown: stop accepting, close the rest with 1001, drain. */
    h2o_socket_read_stop(listener);
    h2o_socket_close(listener);
    /* Destroying a hub with a connection open drops it (no close frame). */
    int before = closed;
    size_t doomed = igw_ws_hub_count(hub2);
    CHECK(doomed == 1);
    igw_ws_hub_destroy(hub2);
    CHECK(closed == before + (int)doomed);
    CHECK(closed > 0 && strcmp(closelog[closed - 1].why, "hub destroyed") == 0 && closelog[closed - 1].code == 1001);
    before = closed;
    size_t left = igw_ws_hub_count(hub);
    igw_ws_hub_close_all(hub, 1001, "going away");
    int64_t deadline = igw_clock_ms() + 5000;
    while ((igw_ws_hub_sockets(hub) || nconns) && igw_clock_ms() < deadline)
        h2o_evloop_run(loop, 50);
    CHECK(closed == before + (int)left);
    CHECK(igw_ws_hub_count(hub) == 0);
    CHECK(igw_ws_hub_sockets(hub) == 0);
    CHECK(nconns == 0);
    CHECK(opened == closed);
    igw_ws_hub_destroy(hub);
    h2o_timeout_dispose(loop, &flood_timeout);
    h2o_context_dispose(&ctx);
    h2o_evloop_run(loop, 0);
    h2o_evloop_destroy(loop);
    h2o_config_dispose(&globalconf);
    free(pad64k);
    printf("ws_test: %d connections\n", opened);
    return check_summary("ws_test");
}
