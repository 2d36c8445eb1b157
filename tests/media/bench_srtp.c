/* bench_srtp.c - nanoseconds per outbound RTP protect of a 1200-byte packet:
 * libsrtp2 (as the system builds it: NSS on Debian 12) against dtls.c's
 * OpenSSL path, for both SRTP profiles.
 *
 * A benchmark, not a test: it prints numbers and asserts nothing about them
 * (tests/media/dtls_test.c shows the two give the same bytes). Each
 * implementation is timed in thread CPU time over several alternating
 * rounds; the best round is the least disturbed by whatever else runs on the
 * machine, the median shows the spread.
 * Run: bench_srtp [packets per round, default 200000] (make bench-srtp:
 * SRTP_PACKETS). The last line is
 *   RESULT gcm_vs_libsrtp=<ratio> cm_vs_libsrtp=<ratio> gcm_ns=<n> cm_ns=<n>
 * (best rounds: libsrtp's ns / ours, > 1 means ours is faster; ours' ns). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>
#include <srtp2/srtp.h>

#include "dtls.h"

#define ROUNDS 7
#define PACKET 1200
#define SSRC 0x5eed1234u

static void die(const char *what)
{
    fprintf(stderr, "bench_srtp: %s\n", what);
    exit(2);
}

/* CPU time of this thread: time spent descheduled while other programs
 * share the machine does not count. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        die("clock_gettime");
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- a handshake in memory, to get an igw_srtp keyed as in production ---- */

#define QMAX 32

typedef struct queue {
    uint8_t dg[QMAX][1200];
    size_t len[QMAX];
    size_t n;
} queue;

static void on_send(void *ud, const uint8_t *p, size_t n)
{
    queue *q = ud;
    if (q->n == QMAX || n > sizeof q->dg[0])
        die("handshake queue overflow");
    memcpy(q->dg[q->n], p, n);
    q->len[q->n++] = n;
}

/* Feeds a copy of what is queued (feeding may queue more for the other side). */
static int deliver(queue *q, igw_dtls *to)
{
    static queue batch;
    int any = q->n > 0;
    batch = *q;
    q->n = 0;
    for (size_t i = 0; i < batch.n; i++)
        igw_dtls_feed(to, batch.dg[i], batch.len[i]);
    return any;
}

/* The client side's SRTP context after a handshake offering only `profile`. */
static igw_srtp *handshake(igw_dtls_cert *cc, igw_dtls_cert *sc, const char *profile)
{
    static queue c2s, s2c;
    char err[128];
    if (igw_dtls_cert_set_profiles(cc, profile) != 0)
        die("set_profiles");
    igw_dtls *c =
        igw_dtls_new(cc, IGW_DTLS_CLIENT, igw_dtls_cert_fp(sc), on_send, &c2s, err, sizeof err);
    igw_dtls *s =
        igw_dtls_new(sc, IGW_DTLS_SERVER, igw_dtls_cert_fp(cc), on_send, &s2c, err, sizeof err);
    if (!c || !s)
        die(err);
    c2s.n = s2c.n = 0;
    igw_dtls_start(c);
    for (int i = 0; i < 20; i++)
        if (!deliver(&c2s, s) && !deliver(&s2c, c))
            break;
    if (igw_dtls_state_get(c) != IGW_DTLS_CONNECTED || igw_dtls_state_get(s) != IGW_DTLS_CONNECTED)
        die("handshake did not complete");
    igw_srtp *out = igw_dtls_srtp_new(c, err, sizeof err);
    if (!out)
        die(err);
    igw_dtls_free(c);
    igw_dtls_free(s);
    return out;
}

/* A libsrtp sender set up as dtls.c sets up its own (random key: the cost
 * does not depend on it). Call after handshake(). */
static srtp_t libsrtp_sender(int gcm)
{
    unsigned char key[SRTP_AES_GCM_128_KEY_LEN_WSALT > SRTP_AES_ICM_128_KEY_LEN_WSALT
                          ? SRTP_AES_GCM_128_KEY_LEN_WSALT
                          : SRTP_AES_ICM_128_KEY_LEN_WSALT];
    if (RAND_bytes(key, sizeof key) != 1)
        die("RAND_bytes");
    srtp_policy_t pol;
    memset(&pol, 0, sizeof pol);
    if (gcm) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&pol.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&pol.rtcp);
    } else {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&pol.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&pol.rtcp);
    }
    pol.ssrc.type = ssrc_any_outbound;
    pol.key = key;
    pol.window_size = 1024;
    pol.allow_repeat_tx = 1;
    srtp_t s = NULL;
    /* igw_dtls_srtp_new ran srtp_init (a second srtp_init fails) */
    if (srtp_create(&s, &pol) != srtp_err_status_ok)
        die("srtp_create");
    return s;
}

/* ---- timing ------------------------------------------------------------------ */

static uint8_t pkt[PACKET + IGW_SRTP_MAX_TRAILER];
static uint16_t seq_ours, seq_lib;

static void header(uint16_t seq)
{
    pkt[0] = 0x80;
    pkt[1] = 96;
    pkt[2] = (uint8_t)(seq >> 8);
    pkt[3] = (uint8_t)seq;
    pkt[8] = (uint8_t)(SSRC >> 24);
    pkt[9] = (uint8_t)(SSRC >> 16);
    pkt[10] = (uint8_t)(SSRC >> 8);
    pkt[11] = (uint8_t)SSRC;
}

/* ns per packet over n packets (the payload is whatever the last round left:
 * the cost does not depend on it). */
static double time_ours(igw_srtp *s, long n)
{
    int64_t t0 = cpu_ns();
    for (long i = 0; i < n; i++) {
        header(seq_ours++);
        size_t len = PACKET;
        if (igw_srtp_protect(s, pkt, &len, sizeof pkt) != 0)
            die("igw_srtp_protect failed");
    }
    return (double)(cpu_ns() - t0) / (double)n;
}

static double time_libsrtp(srtp_t s, long n)
{
    int64_t t0 = cpu_ns();
    for (long i = 0; i < n; i++) {
        header(seq_lib++);
        int len = PACKET;
        if (srtp_protect(s, pkt, &len) != srtp_err_status_ok)
            die("srtp_protect failed");
    }
    return (double)(cpu_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Times one profile; *ratio = libsrtp's best / ours, *ns = ours' best. */
static void bench(igw_dtls_cert *cc, igw_dtls_cert *sc, const char *name, const char *profile,
                  int gcm, long n, double *ratio, double *ns)
{
    igw_srtp *ours = handshake(cc, sc, profile);
    srtp_t lib = libsrtp_sender(gcm);
    double o[ROUNDS], l[ROUNDS];
    time_ours(ours, n / 10); /* warm up both */
    time_libsrtp(lib, n / 10);
    for (int r = 0; r < ROUNDS; r++) {
        l[r] = time_libsrtp(lib, n);
        o[r] = time_ours(ours, n);
    }
    qsort(o, ROUNDS, sizeof o[0], cmp_double);
    qsort(l, ROUNDS, sizeof l[0], cmp_double);
    printf("%-20s libsrtp %7.0f ns (median %7.0f)   ours %7.0f ns (median %7.0f)   %.2fx\n", name,
           l[0], l[ROUNDS / 2], o[0], o[ROUNDS / 2], l[0] / o[0]);
    *ratio = l[0] / o[0];
    *ns = o[0];
    igw_srtp_free(ours);
    srtp_dealloc(lib);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
    if (n < 1000 || n > 100000000)
        die("packets per round: 1000 .. 100000000");
    char err[128];
    igw_dtls_cert *cc = igw_dtls_cert_new(err, sizeof err);
    igw_dtls_cert *sc = igw_dtls_cert_new(err, sizeof err);
    if (!cc || !sc)
        die(err);
    memset(pkt, 0xa5, sizeof pkt);
    printf("protect of a %d-byte RTP packet, best of %d rounds of %ld, per packet:\n", PACKET,
           ROUNDS, n);
    double gcm, gcm_ns, cm, cm_ns;
    bench(cc, sc, "AEAD_AES_128_GCM", "SRTP_AEAD_AES_128_GCM", 1, n, &gcm, &gcm_ns);
    bench(cc, sc, "AES128_CM_SHA1_80", "SRTP_AES128_CM_SHA1_80", 0, n, &cm, &cm_ns);
    igw_dtls_cert_free(cc);
    igw_dtls_cert_free(sc);
    printf("RESULT gcm_vs_libsrtp=%.2f cm_vs_libsrtp=%.2f gcm_ns=%.0f cm_ns=%.0f\n", gcm, cm, gcm_ns, cm_ns);
    return 0;
}
