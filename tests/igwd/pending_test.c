/* pending_test.c - igw_pending (the map of published device commands):
 * a reply's key finds its command once, only for the same device, only
 * before its deadline; the map stays bounded and prunes what expired; two
 * threads putting and taking keep it consistent. Run under ASan/UBSan: a
 * leak or a stray write fails the run. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "command/pending.h"

static igw_pending_cmd cmd(const char *dn, const char *token, int64_t deadline)
{
    return (igw_pending_cmd){.product_id = "P1", .device_name = dn, .device_token = token, .endpoint_id = "ep-1",
                             .msg_token = "m-1", .method = "device.action", .enterprise_id = "42",
                             .deadline_ms = deadline};
}

static void test_take(void)
{
    igw_pending *p = igw_pending_create(8);
    CHECK(p != NULL);
    igw_pending_cmd c = cmd("d1", "tok-a", 1000);
    CHECK(igw_pending_put(p, &c, 0) == 0);

    /* Another device, another product, a prefix or an extension of the token: never. */
    CHECK(igw_pending_take(p, "P1", "d2", "tok-a", 5, 10) == NULL);
    CHECK(igw_pending_take(p, "P2", "d1", "tok-a", 5, 10) == NULL);
    CHECK(igw_pending_take(p, "P1", "d1", "tok-", 4, 10) == NULL);
    CHECK(igw_pending_take(p, "P1", "d1", "tok-ab", 6, 10) == NULL);

    /* The token as the device sent it: not NUL-terminated. */
    const char buf[] = "tok-a\"}";
    igw_pending_cmd *got = igw_pending_take(p, "P1", "d1", buf, 5, 10);
    CHECK(got != NULL);
    if (got) {
        CHECK(!strcmp(got->endpoint_id, "ep-1") && !strcmp(got->msg_token, "m-1"));
        CHECK(!strcmp(got->method, "device.action") && !strcmp(got->enterprise_id, "42"));
        CHECK(!strcmp(got->device_token, "tok-a") && got->deadline_ms == 1000);
        igw_pending_release(got);
    }
    CHECK(igw_pending_take(p, "P1", "d1", "tok-a", 5, 10) == NULL, "taken once only");

    igw_pending_stats st;
    igw_pending_stats_get(p, 0, &st);
    CHECK(st.hits == 1 && st.misses == 5 && st.entries == 0, "hits %llu misses %llu entries %llu",
          (unsigned long long)st.hits, (unsigned long long)st.misses, (unsigned long long)st.entries);
    igw_pending_destroy(p);
}

static void test_deadline(void)
{
    igw_pending *p = igw_pending_create(8);
    igw_pending_cmd c = cmd("d1", "late", 100);
    CHECK(igw_pending_put(p, &c, 0) == 0);
    /* Past its deadline the result may be the timeout's: the caller must ask the database. */
    CHECK(igw_pending_take(p, "P1", "d1", "late", 4, 101) == NULL);
    igw_pending_stats st;
    igw_pending_stats_get(p, 0, &st);
    CHECK(st.entries == 0 && st.misses == 1, "the late entry left with the take");

    /* At the deadline itself it is still live. */
    c = cmd("d1", "edge", 200);
    CHECK(igw_pending_put(p, &c, 0) == 0);
    igw_pending_cmd *got = igw_pending_take(p, "P1", "d1", "edge", 4, 200);
    CHECK(got != NULL);
    igw_pending_release(got);

    /* A put prunes, oldest first, what expired and was never answered. */
    for (int i = 0; i < 5; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "old%d", i);
        c = cmd("d1", tok, 300 + i);
        CHECK(igw_pending_put(p, &c, 0) == 0);
    }
    c = cmd("d1", "new", 1000);
    CHECK(igw_pending_put(p, &c, 303) == 0); /* old0..old2 expired: 300, 301, 302 < 303 */
    igw_pending_stats_get(p, 0, &st);
    CHECK(st.entries == 3, "entries %llu", (unsigned long long)st.entries);
    got = igw_pending_take(p, "P1", "d1", "old3", 4, 303);
    CHECK(got != NULL, "an unexpired one stays");
    igw_pending_release(got);
    igw_pending_destroy(p); /* frees old4 and new: ASan's leak check */
}

static void test_bounds(void)
{
    CHECK(igw_pending_create(0) == NULL);
    CHECK(igw_pending_create((1u << 20) + 1) == NULL);
    igw_pending *p = igw_pending_create(3);
    for (int i = 0; i < 3; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "t%d", i);
        igw_pending_cmd c = cmd("d1", tok, 1000);
        CHECK(igw_pending_put(p, &c, 0) == 0);
    }
    igw_pending_cmd c = cmd("d1", "t3", 1000);
    CHECK(igw_pending_put(p, &c, 0) == -1, "full");
    CHECK(igw_pending_take(p, "P1", "d1", "t3", 2, 0) == NULL, "not stored when full");

    /* The same key again replaces its entry (no second one, no leak). */
    c = cmd("d1", "t1", 2000);
    c.msg_token = "m-2";
    CHECK(igw_pending_put(p, &c, 0) == 0, "a replacement fits when full");
    igw_pending_cmd *got = igw_pending_take(p, "P1", "d1", "t1", 2, 0);
    CHECK(got && !strcmp(got->msg_token, "m-2") && got->deadline_ms == 2000);
    igw_pending_release(got);

    /* Bounded strings: 255 bytes fit, 256 do not; a missing one is refused. */
    char big[257];
    memset(big, 'x', 256);
    big[256] = '\0';
    c = cmd("d1", big, 1000);
    CHECK(igw_pending_put(p, &c, 0) == -1);
    big[255] = '\0';
    c = cmd("d1", big, 1000);
    CHECK(igw_pending_put(p, &c, 0) == 0, "255 bytes fit");
    got = igw_pending_take(p, "P1", "d1", big, 255, 0);
    CHECK(got && strlen(got->device_token) == 255);
    igw_pending_release(got);
    c = cmd("d1", "t9", 1000);
    c.endpoint_id = NULL;
    CHECK(igw_pending_put(p, &c, 0) == -1);

    igw_pending_stats st;
    igw_pending_stats_get(p, 0, &st);
    CHECK(st.entries == 2 && st.refused == 3, "entries %llu refused %llu", (unsigned long long)st.entries,
          (unsigned long long)st.refused);

    /* Full of commands past their deadline: a put makes room by pruning them. */
    igw_pending *q = igw_pending_create(2);
    c = cmd("d1", "x1", 100);
    CHECK(igw_pending_put(q, &c, 0) == 0);
    c = cmd("d1", "x2", 100);
    CHECK(igw_pending_put(q, &c, 0) == 0);
    c = cmd("d1", "x3", 500);
    CHECK(igw_pending_put(q, &c, 0) == -1, "full while they are live");
    CHECK(igw_pending_put(q, &c, 101) == 0, "room once they are past");
    /* The gauge does not count what is past its deadline either. */
    igw_pending_stats_get(q, 501, &st);
    CHECK(st.entries == 0, "entries %llu", (unsigned long long)st.entries);
    igw_pending_destroy(q);
    igw_pending_destroy(p);
    igw_pending_destroy(NULL);
}

/* 1000 keys in 1024 buckets: about a third share a bucket with another
 * (chains), and taking every third key out of order removes from their
 * heads, middles and ends. */
static void test_collisions(void)
{
    igw_pending *p = igw_pending_create(1024);
    enum { N = 1000 };
    for (int i = 0; i < N; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "k%d", i);
        igw_pending_cmd c = cmd(i % 2 ? "odd" : "even", tok, 1000 + i);
        CHECK(igw_pending_put(p, &c, 0) == 0);
    }
    int found = 0, right = 0;
    for (int i = N - 1; i >= 0; i -= 3) { /* out of put order */
        char tok[16];
        snprintf(tok, sizeof tok, "k%d", i);
        igw_pending_cmd *got = igw_pending_take(p, "P1", i % 2 ? "odd" : "even", tok, strlen(tok), 0);
        found += got != NULL;
        right += got && got->deadline_ms == 1000 + i;
        igw_pending_release(got);
    }
    CHECK(found == (N + 2) / 3 && right == found, "found %d right %d", found, right);
    igw_pending_cmd c = cmd("even", "x", 5000);
    CHECK(igw_pending_put(p, &c, 1000 + N) == 0); /* prunes the 666 left, through their chains */
    igw_pending_stats st;
    igw_pending_stats_get(p, 0, &st);
    CHECK(st.entries == 1, "entries %llu", (unsigned long long)st.entries);
    igw_pending_destroy(p);
}

/* One thread puts (a worker accepting commands), another takes (the
 * device's worker): every command is taken exactly once. */
enum { THREAD_N = 20000 };
#define SPIN_MAX 100000000L /* a bound, far above what a working map needs: a hang becomes a failure */
static igw_pending *shared;

static void *putter(void *arg)
{
    (void)arg;
    for (int i = 0; i < THREAD_N; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "c%d", i);
        igw_pending_cmd c = cmd("dev", tok, 1000);
        long spins = 0;
        while (igw_pending_put(shared, &c, 0) != 0) /* full: the taker catches up */
            if (++spins > SPIN_MAX)
                return "put never found room";
            else
                sched_yield();
    }
    return NULL;
}

static void test_threads(void)
{
    shared = igw_pending_create(256);
    pthread_t t;
    if (pthread_create(&t, NULL, putter, NULL) != 0) {
        CHECK(false, "pthread_create");
        igw_pending_destroy(shared);
        return;
    }
    int taken = 0;
    for (int i = 0; i < THREAD_N; i++) {
        char tok[16];
        snprintf(tok, sizeof tok, "c%d", i);
        igw_pending_cmd *got;
        long spins = 0;
        while (!(got = igw_pending_take(shared, "P1", "dev", tok, strlen(tok), 0)) && ++spins <= SPIN_MAX)
            sched_yield();
        if (!got)
            break;
        taken += !strcmp(got->device_token, tok);
        igw_pending_release(got);
    }
    void *why = NULL;
    CHECK(pthread_join(t, &why) == 0 && why == NULL, "%s", why ? (const char *)why : "");
    igw_pending_stats st;
    igw_pending_stats_get(shared, 0, &st);
    CHECK(taken == THREAD_N && st.hits == THREAD_N && st.entries == 0, "taken %d hits %llu entries %llu", taken,
          (unsigned long long)st.hits, (unsigned long long)st.entries);
    igw_pending_destroy(shared);
}

int main(void)
{
    test_take();
    test_deadline();
    test_bounds();
    test_collisions();
    test_threads();
    return check_summary("pending_test");
}
