/* mux_test.c - the per-thread ICE-lite socket (src/media/mux.c) on
 * loopback: checks answered and sorted by ufrag, a nomination selecting
 * the address media then comes from, refusals, an ICE restart's new
 * credentials, removal. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mux.h"
#include "stun.h"

#include "../check.h"

typedef struct seen {
    int checks, selected, data;
    char last[64];
} seen;

static void on_check(void *ud, igw_mux_peer *mp, const struct sockaddr *from, socklen_t len, bool selected)
{
    seen *s = ud;
    (void)mp, (void)from, (void)len;
    s->checks++;
    s->selected += selected;
}

static void on_data(void *ud, uint8_t *buf, size_t len)
{
    seen *s = ud;
    s->data++;
    snprintf(s->last, sizeof s->last, "%.*s", (int)len, (const char *)buf);
}

static const igw_mux_ops ops = {.on_check = on_check, .on_data = on_data};

typedef struct fixture {
    GMainContext *ctx;
    igw_mux *m;
    struct sockaddr_in to;
} fixture;

static int client(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort();
    return fd;
}

static void pump(fixture *f, int ms)
{
    gint64 end = g_get_monotonic_time() + ms * 1000;
    while (g_get_monotonic_time() < end)
        if (!g_main_context_iteration(f->ctx, FALSE))
            g_usleep(1000);
}

/* A check as a controlling full agent sends it (controlled when `role` is
 * false). */
static void send_check_as(fixture *f, int fd, const char *username, const char *pwd, bool nominate, bool role)
{
    uint8_t out[IGW_STUN_REPLY_MAX], tid[IGW_STUN_TID] = {7, 7, 7};
    size_t n = igw_stun_request_write(out, sizeof out, tid, username, 100, role, 1, nominate, pwd, strlen(pwd));
    if (n == 0 || sendto(fd, out, n, 0, (struct sockaddr *)&f->to, sizeof f->to) != (ssize_t)n)
        abort();
}

static void send_check(fixture *f, int fd, const char *username, const char *pwd, bool nominate)
{
    send_check_as(f, fd, username, pwd, nominate, true);
}

static void send_data(fixture *f, int fd, const char *text)
{
    if (sendto(fd, text, strlen(text), 0, (struct sockaddr *)&f->to, sizeof f->to) != (ssize_t)strlen(text))
        abort();
}

/* What the client got back within ms: its length (0: nothing). */
static size_t reply(fixture *f, int fd, uint8_t *buf, size_t cap, int ms)
{
    gint64 end = g_get_monotonic_time() + ms * 1000;
    ssize_t n;
    while ((n = recv(fd, buf, cap, 0)) < 0 && g_get_monotonic_time() < end)
        pump(f, 2);
    return n > 0 ? (size_t)n : 0;
}

static fixture F;
static const char PA[] = "pwd-of-peer-a-0123456789", PB[] = "pwd-of-peer-b-0123456789";

/* The cases run in order on one mux and two peers (each says what it
 * needs from the ones before). */
static seen a, b;
static igw_mux_peer *pa, *pb;
static int ca, cb;

/* Checks are answered for the peer their ufrag names; media waits for a
 * passed check, whose address is then the path. */
static void test_checks_select(void)
{
    uint8_t buf[IGW_MUX_BUF];
    ca = client(), cb = client();
    pa = igw_mux_add(F.m, "ufraga", PA, &ops, &a), pb = igw_mux_add(F.m, "ufragb", PB, &ops, &b);
    CHECK(pa && pb);
    CHECK(igw_mux_add(F.m, "ufraga", PB, &ops, &b) == NULL, "a ufrag is one peer's");
    CHECK(igw_mux_add(F.m, "u-far-too-long-ufrag-for-this-mux-0123456789", PB, &ops, &b) == NULL);

    send_data(&F, ca, "early");
    pump(&F, 30);
    CHECK(a.data == 0, "media before any check goes nowhere");
    CHECK(igw_mux_send(pa, (const uint8_t *)"x", 1) == -1, "nothing selected to send to");

    send_check(&F, ca, "ufraga:cli", PA, false);
    size_t n = reply(&F, ca, buf, sizeof buf, 500);
    igw_stun_request r;
    CHECK(n > 0 && igw_stun_check_integrity(buf, n, PA, strlen(PA)), "a success sealed with A's password");
    CHECK(igw_stun_parse_request(buf, n, &r) == IGW_STUN_NOT_REQUEST && buf[1] == 0x01);
    CHECK(a.checks == 1 && a.selected == 1 && b.checks == 0, "a passed check selects until a nomination");
    send_data(&F, ca, "rtcp from a");
    pump(&F, 30);
    CHECK(a.data == 1 && strcmp(a.last, "rtcp from a") == 0 && b.data == 0);

    send_check(&F, ca, "ufraga:cli", PA, true);
    CHECK(reply(&F, ca, buf, sizeof buf, 500) > 0 && a.selected == 2);
    CHECK(igw_mux_send(pa, (const uint8_t *)"media to a", 10) == 0);
    n = reply(&F, ca, buf, sizeof buf, 500);
    CHECK(n == 10 && memcmp(buf, "media to a", 10) == 0);
}

/* A wrong password gets a 401 without integrity, a controlled full agent a
 * 487 (it switches and checks again), nobody's ufrag silence. Needs
 * test_checks_select. */
static void test_refusals(void)
{
    uint8_t buf[IGW_MUX_BUF];
    send_check(&F, cb, "ufraga:cli", PB, true);
    size_t n = reply(&F, cb, buf, sizeof buf, 500);
    CHECK(n > 0 && buf[0] == 0x01 && buf[1] == 0x11 && buf[26] == 4 && buf[27] == 1);
    CHECK(igw_stun_check_fingerprint(buf, n) && !igw_stun_check_integrity(buf, n, PB, strlen(PB)));
    send_check_as(&F, cb, "ufragb:cli", PB, true, false);
    n = reply(&F, cb, buf, sizeof buf, 500);
    CHECK(n > 0 && buf[1] == 0x11 && buf[26] == 4 && buf[27] == 87 && igw_stun_check_integrity(buf, n, PB, strlen(PB)),
          "487 Role Conflict, sealed");
    CHECK(a.checks == 1 + 1 && a.selected == 2 && b.checks == 0, "refused checks reach no peer");
    send_check(&F, cb, "nobody:cli", PB, true);
    CHECK(reply(&F, cb, buf, sizeof buf, 100) == 0);
}

/* Two peers on one socket each get their own media; a passed check from
 * elsewhere does not move a nominated path. Needs the above. */
static void test_two_peers(void)
{
    uint8_t buf[IGW_MUX_BUF];
    send_check(&F, cb, "ufragb:cli", PB, true);
    CHECK(reply(&F, cb, buf, sizeof buf, 500) > 0 && b.selected == 1);
    send_data(&F, cb, "from b");
    send_data(&F, ca, "from a");
    pump(&F, 30);
    CHECK(b.data == 1 && strcmp(b.last, "from b") == 0 && a.data == 2 && strcmp(a.last, "from a") == 0);
    int other = client();
    send_check(&F, other, "ufraga:cli", PA, false);
    CHECK(reply(&F, other, buf, sizeof buf, 500) > 0 && a.checks == 3 && a.selected == 2);
    send_data(&F, other, "elsewhere");
    send_data(&F, ca, "still from a");
    pump(&F, 30);
    CHECK(a.data == 3 && strcmp(a.last, "still from a") == 0);
    close(other);
}

/* Media leaves in batches: what is queued in one turn of the loop goes in
 * one sendmmsg (a full queue goes at once), in order. Needs B selected. */
static void test_sends_batched(void)
{
    igw_mux_stats st0, st1;
    igw_mux_stats_get(F.m, &st0);
    char text[16];
    for (int i = 0; i < 40; i++) {
        snprintf(text, sizeof text, "pkt %02d", i);
        CHECK(igw_mux_send(pb, (const uint8_t *)text, strlen(text)) == 0);
    }
    uint8_t buf[IGW_MUX_BUF];
    int got = 0;
    while (recv(cb, buf, sizeof buf, 0) > 0)
        got++;
    CHECK(got == 32, "a full queue left at once, the rest waits for the loop (%d)", got);
    pump(&F, 5);
    bool order = true;
    for (int i = 32; i < 40; i++) {
        ssize_t n = recv(cb, buf, sizeof buf - 1, 0);
        snprintf(text, sizeof text, "pkt %02d", i);
        order = order && n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
    }
    CHECK(order, "the rest before the loop polled again, in order");
    igw_mux_stats_get(F.m, &st1);
    CHECK(st1.sent - st0.sent == 40 && st1.send_batches - st0.send_batches == 2 && st1.send_dropped == 0,
          "sent %llu in %llu batches", (unsigned long long)(st1.sent - st0.sent),
          (unsigned long long)(st1.send_batches - st0.send_batches));
    uint8_t big[IGW_MUX_BUF + 1] = {0};
    CHECK(igw_mux_send(pb, big, sizeof big) == -1, "longer than a datagram of ours");
}

/* An ICE restart: new credentials; the old ones are nobody's, the selected
 * address carries media until a new nomination. Then removal. Needs the
 * above. */
static void test_restart_and_remove(void)
{
    uint8_t buf[IGW_MUX_BUF];
    CHECK(igw_mux_set_credentials(pa, "ufragb", PA) == -1, "B's ufrag");
    CHECK(igw_mux_set_credentials(pa, "ufragc", "new-pwd-of-a-0123456789") == 0);
    send_check(&F, ca, "ufraga:cli", PA, true);
    CHECK(reply(&F, ca, buf, sizeof buf, 100) == 0 && a.checks == 3, "the old ufrag is nobody's");
    send_data(&F, ca, "still a");
    pump(&F, 30);
    CHECK(a.data == 4 && strcmp(a.last, "still a") == 0);
    send_check(&F, ca, "ufragc:cli", "new-pwd-of-a-0123456789", true);
    CHECK(reply(&F, ca, buf, sizeof buf, 500) > 0 && a.selected == 3);

    igw_mux_remove(pa);
    send_data(&F, ca, "after");
    pump(&F, 30);
    CHECK(a.data == 4, "a removed peer's address delivers nothing");
    igw_mux_stats st;
    igw_mux_stats_get(F.m, &st);
    CHECK(st.checks == 9 && st.checks_refused == 4 && st.data == 5 && st.data_unknown == 3,
          "checks %llu refused %llu data %llu unknown %llu", (unsigned long long)st.checks,
          (unsigned long long)st.checks_refused, (unsigned long long)st.data, (unsigned long long)st.data_unknown);
    igw_mux_remove(pb);
    close(ca);
    close(cb);
}

static const check_case cases[] = {
    CHECK_CASE(test_checks_select),
    CHECK_CASE(test_refusals),
    CHECK_CASE(test_two_peers),
    CHECK_CASE(test_sends_batched),
    CHECK_CASE(test_restart_and_remove),
};

int main(void)
{
    char err[128];
    F.ctx = g_main_context_new();
    F.m = igw_mux_new(F.ctx, "127.0.0.1", 0, err, sizeof err);
    if (!F.m) {
        fprintf(stderr, "mux_test: %s\n", err);
        return 1;
    }
    F.to = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(igw_mux_port(F.m)),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK_RUN_ALL(cases);
    igw_mux_free(F.m);
    g_main_context_unref(F.ctx);
    return check_summary("mux");
}
