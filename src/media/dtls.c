/* dtls.c - DTLS-SRTP for one WebRTC transport (see dtls.h).
 *
 * OpenSSL runs over two memory BIOs: datagrams from ICE are written into the
 * read BIO one at a time, and whatever OpenSSL wrote into the write BIO is cut
 * at DTLS record boundaries and packed into datagrams of at most 1200 bytes
 * (a memory BIO concatenates records, so OpenSSL's own datagram boundaries are
 * lost; every record is at most the MTU, so any packing of whole records is a
 * valid one). The peer certificate is authenticated by the SDP fingerprint
 * alone, in the verify callback (so a wrong peer is refused before the
 * handshake completes) and again once it completed. SRTP keys are exported
 * per RFC 5764 into two libsrtp2 sessions, one per direction.
 *
 * Outbound RTP, protected once per viewer for every forwarded packet, does
 * not go through libsrtp: Debian's libsrtp2 is built against NSS, which
 * builds a PK11 context for each packet (a quarter of the forwarding CPU).
 * It is done here with OpenSSL contexts keyed once per session: the session
 * keys derived as RFC 3711 4.3 says, AES-GCM per RFC 7714 or AES-CM with
 * HMAC-SHA1 per RFC 3711, and the index of each packet estimated exactly as
 * libsrtp does for a sender, so the bytes on the wire are libsrtp's. Inbound
 * RTP (and its replay protection) and RTCP both ways stay with libsrtp. */
#include "dtls.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <srtp2/srtp.h>

#include "wire.h"

#define FP_LEN 32
#define DTLS_MTU 1200
#define DTLS_RECORD_HEADER 13 /* type, version, epoch + sequence, length at 11 */
#define HANDSHAKE_LIMIT_US (30 * 1000000LL)
/* Retransmission timer: RFC 6347 suggests 1 s, WebRTC stacks start lower so a
 * lost flight costs less; doubled up to 4 s, well within the 30-s limit. */
#define RETRANSMIT_FIRST_US 250000u
#define RETRANSMIT_MAX_US 4000000u
/* No sane DTLS peer sends larger datagrams; larger ones are dropped unread. */
#define MAX_DATAGRAM 16384
/* SSL_read calls per fed datagram: ends the loop whatever OpenSSL does. */
#define READ_ROUNDS 64

#define DEFAULT_PROFILES "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80"
#define CIPHERS                                                                          \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"                       \
    "ECDHE-ECDSA-CHACHA20-POLY1305"
#define GROUPS "X25519:P-256:P-384"

/* SRTP master key and salt lengths (RFC 5764, RFC 7714). */
#define SRTP_KEY_LEN 16
#define SRTP_SALT_GCM 12
#define SRTP_SALT_CM 14
#define SRTP_SALT_MAX SRTP_SALT_CM
/* RFC 3711: HMAC-SHA1 key, the tag AES128_CM_SHA1_80 sends; RFC 7714 tag. */
#define SRTP_AUTH_KEY_LEN 20
#define SRTP_CM_TAG 10
#define SRTP_GCM_TAG 16
/* KDF labels (RFC 3711 4.3.2) of the outbound RTP session keys. */
#define LABEL_RTP_ENC 0x00
#define LABEL_RTP_AUTH 0x01
#define LABEL_RTP_SALT 0x02
/* Replay window of both libsrtp sessions. libsrtp keeps it for a sender too:
 * it refuses to protect an index this far behind the newest, and our
 * outbound RTP does the same so that nothing changes on the wire. */
#define SRTP_WINDOW 1024
/* The packet index is 48 bits (RFC 3711 3.3.1). */
#define SRTP_INDEX_END ((uint64_t)1 << 48)

_Static_assert(SRTP_MAX_TAG_LEN + 4 <= IGW_SRTP_MAX_TRAILER, "trailer bound below libsrtp's tag");

struct igw_dtls_cert {
    EVP_PKEY *key;
    X509 *x509;
    SSL_CTX *ctx;
    uint8_t fp[FP_LEN];
    char fp_text[FP_LEN * 3];
};

struct igw_dtls {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    igw_dtls_role role;
    igw_dtls_state state;
    igw_srtp_profile profile;
    uint8_t peer_fp[FP_LEN];
    igw_dtls_send_fn send;
    void *ud;
    int64_t deadline_us; /* monotonic time by which the handshake must finish */
    bool fp_rejected;    /* the verify callback refused the peer's certificate */
    int alert;           /* fatal alert or close_notify received (level << 8 | desc), -1 */
    char reason[96];
};

/* One outbound RTP SSRC: libsrtp's sender state without the bitmap, which
 * a sender that allows retransmissions never consults. */
typedef struct out_stream {
    uint32_t ssrc;
    uint64_t high; /* highest index (ROC << 16 | SEQ) protected so far */
} out_stream;

struct igw_srtp {
    srtp_t out; /* our write key, any outbound SSRC: RTCP only */
    srtp_t in;  /* the peer's write key, any inbound SSRC */
    /* outbound RTP, keyed with the session keys of our write key */
    bool gcm;
    EVP_CIPHER_CTX *enc; /* AES-128-GCM, or AES-128-CTR for AES-CM */
    EVP_MAC_CTX *mac;    /* HMAC-SHA1 (AES-CM only) */
    uint8_t salt[SRTP_SALT_MAX]; /* session salt: 12 bytes for GCM, 14 for CM */
    size_t nstreams;
    out_stream streams[IGW_SRTP_MAX_OUT_SSRC];
};

/* ---- helpers ------------------------------------------------------------------ */

static int64_t now_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0; /* cannot fail for CLOCK_MONOTONIC on Linux */
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* err = what (+ OpenSSL's reason), and the thread's error queue emptied. */
static void set_err(char *err, size_t errlen, const char *what)
{
    if (err && errlen) {
        unsigned long e = ERR_peek_error();
        const char *why = e ? ERR_reason_error_string(e) : NULL;
        if (why)
            snprintf(err, errlen, "%s: %s", what, why);
        else
            snprintf(err, errlen, "%s", what);
    }
    ERR_clear_error();
}

static bool cert_matches(const igw_dtls *d, const X509 *x)
{
    uint8_t md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!x || !X509_digest(x, EVP_sha256(), md, &n) || n != FP_LEN)
        return false;
    return CRYPTO_memcmp(md, d->peer_fp, FP_LEN) == 0;
}

/* ---- the certificate ------------------------------------------------------------ */

/* Any chain is fine to OpenSSL: the peer is authenticated by its certificate's
 * fingerprint from the signalled SDP, not by a CA. Checking it here refuses a
 * wrong peer with a bad_certificate alert before the handshake completes. */
static int verify_cb(int preverify_ok, X509_STORE_CTX *xs)
{
    (void)preverify_ok;
    SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
    igw_dtls *d = ssl ? SSL_get_app_data(ssl) : NULL;
    if (d && cert_matches(d, X509_STORE_CTX_get0_cert(xs)))
        return 1;
    if (d)
        d->fp_rejected = true;
    X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
    return 0;
}

static X509 *make_x509(EVP_PKEY *key)
{
    X509 *x = X509_new();
    BIGNUM *bn = NULL;
    uint8_t rnd[16];
    int ok = x && X509_set_version(x, X509_VERSION_3) && RAND_bytes(rnd, sizeof rnd) == 1;
    if (ok) {
        rnd[0] &= 0x7f; /* a positive serial that encodes in 16 bytes ... */
        rnd[0] |= 0x40; /* ... and is never zero */
        bn = BN_bin2bn(rnd, sizeof rnd, NULL);
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    }
    X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
    ok = ok && name &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"igw", -1, -1,
                                    0) == 1 &&
         X509_set_issuer_name(x, name) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(x), -86400L) != NULL && /* clock skew */
         X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400L) != NULL &&
         X509_set_pubkey(x, key) == 1 && X509_sign(x, key, EVP_sha256()) > 0;
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static SSL_CTX *make_ctx(X509 *x, EVP_PKEY *key)
{
    SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
    if (!ctx)
        return NULL;
    /* set_tlsext_use_srtp returns 0 on success, unlike everything else. */
    if (SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION) != 1 ||
        SSL_CTX_use_certificate(ctx, x) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1 || SSL_CTX_set_cipher_list(ctx, CIPHERS) != 1 ||
        SSL_CTX_set1_groups_list(ctx, GROUPS) != 1 ||
        SSL_CTX_set_tlsext_use_srtp(ctx, DEFAULT_PROFILES) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
    SSL_CTX_set_read_ahead(ctx, 1);
    /* The MTU is ours to set (a memory BIO knows none); no resumption (every
     * handshake must show the certificate) and no renegotiation (nothing to
     * gain, and a rekey would invalidate the exported SRTP keys). */
    SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return ctx;
}

igw_dtls_cert *igw_dtls_cert_new(char *err, size_t errlen)
{
    ERR_clear_error();
    igw_dtls_cert *c = calloc(1, sizeof *c);
    if (!c) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    const char *what = NULL;
    unsigned int n = 0;
    if (!(c->key = EVP_EC_gen("P-256")))
        what = "EC key generation failed";
    else if (!(c->x509 = make_x509(c->key)))
        what = "certificate creation failed";
    else if (!X509_digest(c->x509, EVP_sha256(), c->fp, &n) || n != FP_LEN)
        what = "certificate digest failed";
    else if (!(c->ctx = make_ctx(c->x509, c->key)))
        what = "SSL_CTX setup failed";
    if (what) {
        set_err(err, errlen, what);
        igw_dtls_cert_free(c);
        return NULL;
    }
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < FP_LEN; i++) {
        c->fp_text[i * 3] = hex[c->fp[i] >> 4];
        c->fp_text[i * 3 + 1] = hex[c->fp[i] & 15];
        c->fp_text[i * 3 + 2] = i + 1 < FP_LEN ? ':' : '\0';
    }
    ERR_clear_error();
    return c;
}

void igw_dtls_cert_free(igw_dtls_cert *c)
{
    if (!c)
        return;
    SSL_CTX_free(c->ctx);
    X509_free(c->x509);
    EVP_PKEY_free(c->key);
    free(c);
}

const uint8_t *igw_dtls_cert_fp(const igw_dtls_cert *c)
{
    return c->fp;
}

const char *igw_dtls_cert_fp_text(const igw_dtls_cert *c)
{
    return c->fp_text;
}

int igw_dtls_cert_set_profiles(igw_dtls_cert *c, const char *profiles)
{
    if (!c || !profiles)
        return -1;
    /* Validate on a scratch context first: a failed call on the real one
     * could leave its list half replaced. */
    SSL_CTX *probe = SSL_CTX_new(DTLS_method());
    int ok = probe && SSL_CTX_set_tlsext_use_srtp(probe, profiles) == 0 &&
             SSL_CTX_set_tlsext_use_srtp(c->ctx, profiles) == 0;
    SSL_CTX_free(probe);
    ERR_clear_error();
    return ok ? 0 : -1;
}

/* ---- one transport ---------------------------------------------------------------- */

static unsigned int timer_cb(SSL *ssl, unsigned int prev_us)
{
    (void)ssl;
    if (prev_us == 0)
        return RETRANSMIT_FIRST_US;
    return prev_us >= RETRANSMIT_MAX_US / 2 ? RETRANSMIT_MAX_US : prev_us * 2;
}

/* Notes the alert that ended the connection; the state changes after the SSL
 * call returns, never from inside OpenSSL. */
static void info_cb(const SSL *ssl, int where, int ret)
{
    if (!(where & SSL_CB_ALERT) || !(where & SSL_CB_READ))
        return;
    igw_dtls *d = SSL_get_app_data(ssl);
    int level = (ret >> 8) & 0xff, desc = ret & 0xff;
    if (d && d->alert < 0 && (level == SSL3_AL_FATAL || desc == SSL_AD_CLOSE_NOTIFY))
        d->alert = ret & 0xffff;
}

/* Hands what OpenSSL wrote to send(), whole records packed into datagrams of
 * at most DTLS_MTU bytes (a record larger than that, which OpenSSL does not
 * make with our MTU set, goes alone). */
static void flush_out(igw_dtls *d)
{
    char *data = NULL;
    long got = BIO_get_mem_data(d->wbio, &data);
    if (got <= 0 || !data)
        return;
    const uint8_t *p = (const uint8_t *)data;
    size_t len = (size_t)got, start = 0, off = 0;
    while (off < len) {
        size_t rec = len - off;
        if (rec >= DTLS_RECORD_HEADER) {
            size_t body = igw_rd16(p + off + 11);
            if (DTLS_RECORD_HEADER + body < rec)
                rec = DTLS_RECORD_HEADER + body;
        }
        if (off > start && off + rec - start > DTLS_MTU) {
            d->send(d->ud, p + start, off - start);
            start = off;
        }
        off += rec;
    }
    if (off > start)
        d->send(d->ud, p + start, off - start);
    if (BIO_reset(d->wbio) != 1)
        ERR_clear_error(); /* cannot fail for a writable memory BIO */
}

/* Moves to FAILED keeping the first reason. */
static void fail(igw_dtls *d, const char *reason)
{
    if (d->state == IGW_DTLS_FAILED || d->state == IGW_DTLS_CLOSED)
        return;
    d->state = IGW_DTLS_FAILED;
    snprintf(d->reason, sizeof d->reason, "%s", reason);
}

/* The handshake completed on OpenSSL's side but we refuse the result: tell
 * the peer (close_notify, the only alert OpenSSL sends on request). */
static void refuse(igw_dtls *d, const char *reason)
{
    fail(d, reason);
    if (SSL_shutdown(d->ssl) < 0)
        ERR_clear_error();
}

/* An SSL call failed for good: name the cause. */
static void failed_call(igw_dtls *d, const char *what)
{
    char reason[sizeof d->reason];
    if (d->fp_rejected) {
        fail(d, "fingerprint mismatch");
    } else if (d->alert >= 0 && (d->alert & 0xff) == SSL_AD_CLOSE_NOTIFY) {
        d->state = IGW_DTLS_CLOSED;
    } else if (d->alert >= 0) {
        snprintf(reason, sizeof reason, "alert: %s", SSL_alert_desc_string_long(d->alert));
        fail(d, reason);
    } else {
        unsigned long e = ERR_peek_error();
        const char *why = e ? ERR_reason_error_string(e) : NULL;
        snprintf(reason, sizeof reason, "%s: %s", what, why ? why : "unknown error");
        fail(d, reason);
    }
}

static void handshake_done(igw_dtls *d)
{
    /* The verify callback saw this certificate already; checking the one
     * the session ended up with costs a hash and guards against any path
     * that skipped the callback. */
    if (!cert_matches(d, SSL_get0_peer_certificate(d->ssl))) {
        refuse(d, "fingerprint mismatch");
        return;
    }
    const SRTP_PROTECTION_PROFILE *p = SSL_get_selected_srtp_profile(d->ssl);
    if (p && p->id == SRTP_AEAD_AES_128_GCM) {
        d->profile = IGW_SRTP_AEAD_AES_128_GCM;
    } else if (p && p->id == SRTP_AES128_CM_SHA1_80) {
        d->profile = IGW_SRTP_AES128_CM_SHA1_80;
    } else {
        refuse(d, "no SRTP profile");
        return;
    }
    d->state = IGW_DTLS_CONNECTED;
}

static void handshake_step(igw_dtls *d)
{
    int r = SSL_do_handshake(d->ssl);
    if (r == 1) {
        handshake_done(d);
        return;
    }
    int e = SSL_get_error(d->ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        failed_call(d, "handshake failed");
}

/* Connected: lets OpenSSL see alerts, close_notify and the peer's
 * retransmitted final flight (answered with ours); application data is
 * read and dropped. */
static void read_step(igw_dtls *d)
{
    uint8_t scratch[2048];
    for (int i = 0; i < READ_ROUNDS && d->state == IGW_DTLS_CONNECTED; i++) {
        int r = SSL_read(d->ssl, scratch, sizeof scratch);
        if (r > 0)
            continue;
        int e = SSL_get_error(d->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            break;
        if (e == SSL_ERROR_ZERO_RETURN) {
            if (SSL_shutdown(d->ssl) < 0) /* answer the close_notify */
                ERR_clear_error();
            d->state = IGW_DTLS_CLOSED;
            break;
        }
        failed_call(d, "dtls error");
    }
}

void igw_dtls_set_send(igw_dtls *d, igw_dtls_send_fn send, void *ud)
{
    d->send = send;
    d->ud = ud;
}

igw_dtls *igw_dtls_new(igw_dtls_cert *cert, igw_dtls_role role, const uint8_t peer_fp[32],
                       igw_dtls_send_fn send, void *ud, char *err, size_t errlen)
{
    ERR_clear_error();
    if (!cert || !peer_fp || !send || (role != IGW_DTLS_CLIENT && role != IGW_DTLS_SERVER)) {
        set_err(err, errlen, "invalid argument");
        return NULL;
    }
    igw_dtls *d = calloc(1, sizeof *d);
    if (!d) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    d->role = role;
    d->state = IGW_DTLS_NEW;
    d->alert = -1;
    d->send = send;
    d->ud = ud;
    memcpy(d->peer_fp, peer_fp, FP_LEN);

    BIO *rbio = NULL, *wbio = NULL;
    d->ssl = SSL_new(cert->ctx);
    if (d->ssl) {
        rbio = BIO_new(BIO_s_mem());
        wbio = BIO_new(BIO_s_mem());
    }
    if (!d->ssl || !rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        set_err(err, errlen, "out of memory");
        igw_dtls_free(d);
        return NULL;
    }
    /* An empty read BIO means "no datagram yet", not end of file. */
    BIO_set_mem_eof_return(rbio, -1);
    BIO_set_mem_eof_return(wbio, -1);
    SSL_set_bio(d->ssl, rbio, wbio); /* the SSL owns both now */
    d->rbio = rbio;
    d->wbio = wbio;
    SSL_set_options(d->ssl, SSL_OP_NO_QUERY_MTU);
    if (SSL_set_app_data(d->ssl, d) != 1 || SSL_set_mtu(d->ssl, DTLS_MTU) <= 0) {
        set_err(err, errlen, "SSL setup failed");
        igw_dtls_free(d);
        return NULL;
    }
    SSL_set_info_callback(d->ssl, info_cb);
    DTLS_set_timer_cb(d->ssl, timer_cb);
    if (role == IGW_DTLS_CLIENT)
        SSL_set_connect_state(d->ssl);
    else
        SSL_set_accept_state(d->ssl);
    ERR_clear_error();
    return d;
}

void igw_dtls_free(igw_dtls *d)
{
    if (!d)
        return;
    SSL_free(d->ssl); /* frees both BIOs */
    ERR_clear_error();
    free(d);
}

igw_dtls_state igw_dtls_start(igw_dtls *d)
{
    if (d->state != IGW_DTLS_NEW)
        return d->state;
    ERR_clear_error();
    d->state = IGW_DTLS_HANDSHAKING;
    d->deadline_us = now_us() + HANDSHAKE_LIMIT_US;
    handshake_step(d); /* the client's ClientHello; the server just waits */
    flush_out(d);
    ERR_clear_error();
    return d->state;
}

igw_dtls_state igw_dtls_feed(igw_dtls *d, const uint8_t *p, size_t n)
{
    if (d->state == IGW_DTLS_NEW)
        igw_dtls_start(d);
    if (d->state != IGW_DTLS_HANDSHAKING && d->state != IGW_DTLS_CONNECTED)
        return d->state;
    if (!p || n == 0 || n > MAX_DATAGRAM)
        return d->state;
    ERR_clear_error();
    if (BIO_write(d->rbio, p, (int)n) != (int)n) {
        ERR_clear_error();
        return d->state; /* out of memory: as if the datagram was lost */
    }
    if (d->state == IGW_DTLS_HANDSHAKING)
        handshake_step(d);
    if (d->state == IGW_DTLS_CONNECTED)
        read_step(d); /* records that came with the peer's last flight */
    /* OpenSSL reads a whole datagram at a time; anything it left (only a
     * datagram larger than its buffer) must not prefix the next one. */
    if (BIO_ctrl_pending(d->rbio) > 0 && BIO_reset(d->rbio) != 1)
        ERR_clear_error();
    flush_out(d);
    ERR_clear_error();
    return d->state;
}

int64_t igw_dtls_timeout_us(igw_dtls *d)
{
    if (d->state != IGW_DTLS_HANDSHAKING && d->state != IGW_DTLS_CONNECTED)
        return -1;
    struct timeval tv;
    int64_t t = -1;
    if (DTLSv1_get_timeout(d->ssl, &tv) == 1)
        t = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
    if (d->state == IGW_DTLS_HANDSHAKING) {
        int64_t left = d->deadline_us - now_us();
        if (left < 0)
            left = 0;
        if (t < 0 || left < t)
            t = left;
    }
    ERR_clear_error();
    return t;
}

igw_dtls_state igw_dtls_on_timer(igw_dtls *d)
{
    if (d->state != IGW_DTLS_HANDSHAKING && d->state != IGW_DTLS_CONNECTED)
        return d->state;
    ERR_clear_error();
    if (d->state == IGW_DTLS_HANDSHAKING && now_us() >= d->deadline_us) {
        fail(d, "handshake timeout");
    } else if (DTLSv1_handle_timeout(d->ssl) < 0 && d->state == IGW_DTLS_HANDSHAKING) {
        /* Too many retransmissions; once connected the same only means the
         * peer stopped asking for our final flight. */
        fail(d, "handshake timeout");
    }
    flush_out(d);
    ERR_clear_error();
    return d->state;
}

void igw_dtls_close(igw_dtls *d)
{
    if (!d || d->state == IGW_DTLS_FAILED || d->state == IGW_DTLS_CLOSED)
        return;
    if (d->state == IGW_DTLS_CONNECTED) {
        ERR_clear_error();
        if (SSL_shutdown(d->ssl) < 0) /* 0: sent, peer's answer not awaited */
            ERR_clear_error();
        flush_out(d);
        ERR_clear_error();
    }
    d->state = IGW_DTLS_CLOSED;
}

igw_dtls_state igw_dtls_state_get(const igw_dtls *d)
{
    return d->state;
}

const char *igw_dtls_reason(const igw_dtls *d)
{
    return d->reason;
}

igw_srtp_profile igw_dtls_srtp_profile(const igw_dtls *d)
{
    return d->profile;
}

/* ---- SRTP ------------------------------------------------------------------------- */

static pthread_once_t srtp_once = PTHREAD_ONCE_INIT;
static srtp_err_status_t srtp_init_status = srtp_err_status_fail;

static void srtp_init_once(void)
{
    srtp_init_status = srtp_init();
}

static void srtp_policy_fill(srtp_policy_t *pol, igw_srtp_profile profile, srtp_ssrc_type_t type,
                             unsigned char *key)
{
    memset(pol, 0, sizeof *pol);
    if (profile == IGW_SRTP_AEAD_AES_128_GCM) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&pol->rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&pol->rtcp);
    } else {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&pol->rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&pol->rtcp);
    }
    pol->ssrc.type = type;
    pol->key = key;
    pol->window_size = SRTP_WINDOW;
    pol->allow_repeat_tx = type == ssrc_any_outbound; /* NACKed packets are re-sent */
    pol->next = NULL;
}

/* The AES-CM PRF of RFC 3711 4.3.3 with key_derivation_rate 0: AES-CTR
 * keystream under the master key from IV = (salt XOR label << 64) << 16.
 * The 12-byte GCM master salt is used as salt << 16 (RFC 7714 erratum 4938,
 * and what libsrtp does). */
static int srtp_kdf(const uint8_t *master_key, const uint8_t *master_salt, size_t salt_len,
                    uint8_t label, uint8_t *out, size_t len)
{
    uint8_t iv[16] = {0};
    memcpy(iv, master_salt, salt_len);
    iv[7] ^= label;
    memset(out, 0, len);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    int ok = c && EVP_EncryptInit_ex(c, EVP_aes_128_ctr(), NULL, master_key, iv) == 1 &&
             EVP_EncryptUpdate(c, out, &n, out, (int)len) == 1 && n == (int)len;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

/* Keys the outbound RTP contexts from our master key || salt. */
static int rtp_out_init(igw_srtp *s, bool gcm, const uint8_t *master, size_t salt_len)
{
    const uint8_t *mkey = master, *msalt = master + SRTP_KEY_LEN;
    uint8_t key[SRTP_KEY_LEN], auth[SRTP_AUTH_KEY_LEN];
    s->gcm = gcm;
    int ok = srtp_kdf(mkey, msalt, salt_len, LABEL_RTP_ENC, key, sizeof key) == 0 &&
             srtp_kdf(mkey, msalt, salt_len, LABEL_RTP_SALT, s->salt, salt_len) == 0 &&
             (s->enc = EVP_CIPHER_CTX_new()) != NULL &&
             EVP_EncryptInit_ex(s->enc, gcm ? EVP_aes_128_gcm() : EVP_aes_128_ctr(), NULL, key,
                                NULL) == 1;
    if (ok && !gcm) {
        char digest[] = "SHA1";
        OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
        EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        ok = hmac && (s->mac = EVP_MAC_CTX_new(hmac)) != NULL &&
             srtp_kdf(mkey, msalt, salt_len, LABEL_RTP_AUTH, auth, sizeof auth) == 0 &&
             EVP_MAC_init(s->mac, auth, sizeof auth, params) == 1;
        EVP_MAC_free(hmac); /* the context keeps its own reference */
    }
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(auth, sizeof auth);
    return ok ? 0 : -1;
}

igw_srtp *igw_dtls_srtp_new(const igw_dtls *d, char *err, size_t errlen)
{
    if (!d || d->state != IGW_DTLS_CONNECTED) {
        set_err(err, errlen, "DTLS not connected");
        return NULL;
    }
    if (pthread_once(&srtp_once, srtp_init_once) != 0 || srtp_init_status != srtp_err_status_ok) {
        set_err(err, errlen, "srtp_init failed");
        return NULL;
    }
    const size_t klen = SRTP_KEY_LEN;
    const size_t slen = d->profile == IGW_SRTP_AEAD_AES_128_GCM ? SRTP_SALT_GCM : SRTP_SALT_CM;
    /* client_key | server_key | client_salt | server_salt (RFC 5764 4.2) */
    uint8_t km[2 * (SRTP_KEY_LEN + SRTP_SALT_MAX)];
    /* libsrtp takes key || salt in one buffer */
    uint8_t local[SRTP_KEY_LEN + SRTP_SALT_MAX], remote[SRTP_KEY_LEN + SRTP_SALT_MAX];
    igw_srtp *s = NULL;
    const char *what = NULL;

    ERR_clear_error();
    if (SSL_export_keying_material(d->ssl, km, 2 * (klen + slen), "EXTRACTOR-dtls_srtp", 19, NULL,
                                   0, 0) != 1) {
        set_err(err, errlen, "SRTP key export failed");
        return NULL;
    }
    const uint8_t *ck = km, *sk = km + klen, *cs = km + 2 * klen, *ss = km + 2 * klen + slen;
    bool client = d->role == IGW_DTLS_CLIENT;
    memcpy(local, client ? ck : sk, klen);
    memcpy(local + klen, client ? cs : ss, slen);
    memcpy(remote, client ? sk : ck, klen);
    memcpy(remote + klen, client ? ss : cs, slen);

    /* Two sessions: libsrtp keeps one wildcard-SSRC template per session, so
     * "any outbound" and "any inbound" cannot share one. */
    srtp_policy_t out_pol, in_pol;
    srtp_policy_fill(&out_pol, d->profile, ssrc_any_outbound, local);
    srtp_policy_fill(&in_pol, d->profile, ssrc_any_inbound, remote);
    s = calloc(1, sizeof *s);
    if (!s)
        what = "out of memory";
    else if (srtp_create(&s->out, &out_pol) != srtp_err_status_ok)
        what = "srtp_create (outbound) failed";
    else if (srtp_create(&s->in, &in_pol) != srtp_err_status_ok)
        what = "srtp_create (inbound) failed";
    else if (rtp_out_init(s, d->profile == IGW_SRTP_AEAD_AES_128_GCM, local, slen) != 0)
        what = "outbound RTP key setup failed";
    OPENSSL_cleanse(km, sizeof km);
    OPENSSL_cleanse(local, sizeof local);
    OPENSSL_cleanse(remote, sizeof remote);
    if (what) {
        set_err(err, errlen, what);
        igw_srtp_free(s);
        return NULL;
    }
    return s;
}

void igw_srtp_free(igw_srtp *s)
{
    if (!s)
        return;
    if (s->out)
        srtp_dealloc(s->out); /* only fails for a NULL session */
    if (s->in)
        srtp_dealloc(s->in);
    EVP_CIPHER_CTX_free(s->enc); /* both wipe their key material */
    EVP_MAC_CTX_free(s->mac);
    OPENSSL_cleanse(s, sizeof *s); /* the session salt */
    free(s);
}

/* min: the fixed header (RTP 12, RTCP 8); libsrtp parses the rest itself. */
static int transform(srtp_t ctx, uint8_t *buf, size_t *len, size_t cap, size_t min, bool protect,
                     bool rtcp)
{
    if (!ctx || !buf || !len || *len < min)
        return -1;
    if (protect && (*len > IGW_SRTP_MAX_PACKET || cap < *len + IGW_SRTP_MAX_TRAILER))
        return -1;
    if (!protect && *len > IGW_SRTP_MAX_PACKET + IGW_SRTP_MAX_TRAILER)
        return -1;
    int n = (int)*len; /* bounded above, fits */
    srtp_err_status_t st;
    if (protect)
        st = rtcp ? srtp_protect_rtcp(ctx, buf, &n) : srtp_protect(ctx, buf, &n);
    else
        st = rtcp ? srtp_unprotect_rtcp(ctx, buf, &n) : srtp_unprotect(ctx, buf, &n);
    if (st != srtp_err_status_ok || n < 0 || (size_t)n > (protect ? cap : *len))
        return -1;
    *len = (size_t)n;
    return 0;
}

/* The index of sequence number `seq` given the highest index sent, as
 * libsrtp's srtp_rdbx_estimate_index: RFC 3711 3.3.1 (a seq more than 2^15
 * away from the highest one belongs to the neighbouring ROC), except that
 * while the highest index is at most 2^15 the ROC is 0 (there is no ROC -1,
 * and a stream may start anywhere). */
static uint64_t estimate_index(uint64_t high, uint16_t seq)
{
    if (high <= 0x8000)
        return seq;
    uint64_t roc = high >> 16;
    uint32_t hseq = (uint16_t)high;
    if (hseq < 0x8000 && seq > hseq + 0x8000)
        roc--; /* high > 2^15 and hseq < 2^15: roc >= 1 */
    else if (hseq >= 0x8000 && seq < hseq - 0x8000)
        roc++;
    return roc << 16 | seq;
}

/* The stream of `ssrc`, a new one (index 0, as libsrtp starts) while there
 * is room, or NULL. */
static out_stream *out_stream_of(igw_srtp *s, uint32_t ssrc)
{
    for (size_t i = 0; i < s->nstreams; i++)
        if (s->streams[i].ssrc == ssrc)
            return &s->streams[i];
    if (s->nstreams == IGW_SRTP_MAX_OUT_SSRC)
        return NULL; /* forgetting a ROC could reuse an index: refuse instead */
    out_stream *st = &s->streams[s->nstreams++];
    st->ssrc = ssrc;
    st->high = 0;
    return st;
}

/* RFC 7714: IV = salt XOR (0x0000 || SSRC || ROC || SEQ), the header (with
 * CSRCs and extension) authenticated, the rest (padding included) encrypted,
 * the 16-byte tag appended. */
static int protect_gcm(igw_srtp *s, uint8_t *buf, size_t hlen, size_t n, uint32_t roc)
{
    uint8_t iv[SRTP_SALT_GCM];
    memcpy(iv, s->salt, sizeof iv);
    for (int i = 0; i < 4; i++) {
        iv[2 + i] ^= buf[8 + i];
        iv[6 + i] ^= (uint8_t)(roc >> (24 - 8 * i));
    }
    iv[10] ^= buf[2];
    iv[11] ^= buf[3];
    int out = 0;
    if (EVP_EncryptInit_ex(s->enc, NULL, NULL, NULL, iv) != 1 ||
        EVP_EncryptUpdate(s->enc, NULL, &out, buf, (int)hlen) != 1)
        return -1;
    int plen = (int)(n - hlen); /* n is bounded: fits */
    if (plen > 0 &&
        (EVP_EncryptUpdate(s->enc, buf + hlen, &out, buf + hlen, plen) != 1 || out != plen))
        return -1;
    /* The tag by the parameter itself: EVP_CIPHER_CTX_ctrl would build the
     * same OSSL_PARAM array on every packet (~15 ns of ~350). */
    OSSL_PARAM tag[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, buf + n, SRTP_GCM_TAG),
                         OSSL_PARAM_construct_end()};
    if (EVP_EncryptFinal_ex(s->enc, buf + n, &out) != 1 || out != 0 || EVP_CIPHER_CTX_get_params(s->enc, tag) != 1)
        return -1;
    return SRTP_GCM_TAG;
}

/* RFC 3711: the payload XORed with AES-CTR from IV = salt << 16 XOR SSRC << 64
 * XOR index << 16, then the first 10 bytes of HMAC-SHA1 over the packet and
 * the ROC appended. */
static int protect_cm(igw_srtp *s, uint8_t *buf, size_t hlen, size_t n, uint32_t roc)
{
    uint8_t iv[16] = {0};
    memcpy(iv, s->salt, SRTP_SALT_CM);
    uint8_t roc_be[4];
    for (int i = 0; i < 4; i++) {
        roc_be[i] = (uint8_t)(roc >> (24 - 8 * i));
        iv[4 + i] ^= buf[8 + i];
        iv[8 + i] ^= roc_be[i];
    }
    iv[12] ^= buf[2];
    iv[13] ^= buf[3];
    int out = 0, plen = (int)(n - hlen);
    /* CTR is a stream cipher: Update produces every byte, Final nothing. */
    if (plen > 0 && (EVP_EncryptInit_ex(s->enc, NULL, NULL, NULL, iv) != 1 ||
                     EVP_EncryptUpdate(s->enc, buf + hlen, &out, buf + hlen, plen) != 1 ||
                     out != plen))
        return -1;
    uint8_t tag[EVP_MAX_MD_SIZE];
    size_t tlen = 0;
    if (EVP_MAC_init(s->mac, NULL, 0, NULL) != 1 || /* same key: back to the ipad state */
        EVP_MAC_update(s->mac, buf, n) != 1 || EVP_MAC_update(s->mac, roc_be, sizeof roc_be) != 1 ||
        EVP_MAC_final(s->mac, tag, &tlen, sizeof tag) != 1 || tlen < SRTP_CM_TAG)
        return -1;
    memcpy(buf + n, tag, SRTP_CM_TAG);
    return SRTP_CM_TAG;
}

int igw_srtp_protect(igw_srtp *s, uint8_t *buf, size_t *len, size_t cap)
{
    if (!s || !s->enc || !buf || !len || *len < 12 || *len > IGW_SRTP_MAX_PACKET ||
        cap < *len + IGW_SRTP_MAX_TRAILER)
        return -1;
    size_t n = *len;
    /* The header as libsrtp bounds it: CSRCs, then the extension's 4-byte
     * head and its length in words, all inside the packet. */
    size_t hlen = 12 + 4 * (size_t)(buf[0] & 0x0f);
    if (buf[0] & 0x10) {
        if (hlen + 4 > n)
            return -1;
        hlen += 4 + 4 * (size_t)igw_rd16(buf + hlen + 2);
    }
    if (hlen > n)
        return -1;
    uint32_t ssrc = igw_rd32(buf + 8);
    uint16_t seq = igw_rd16(buf + 2);
    out_stream *st = out_stream_of(s, ssrc);
    if (!st)
        return -1;
    uint64_t index = estimate_index(st->high, seq);
    /* Too far behind the newest: libsrtp's "replay_old"; past 2^48: the key
     * is used up (unreachable at any real packet rate). */
    if (index >= SRTP_INDEX_END || index + SRTP_WINDOW <= st->high)
        return -1;
    int tag = s->gcm ? protect_gcm(s, buf, hlen, n, (uint32_t)(index >> 16))
                     : protect_cm(s, buf, hlen, n, (uint32_t)(index >> 16));
    if (tag < 0) {
        ERR_clear_error();
        return -1;
    }
    if (index > st->high)
        st->high = index;
    *len = n + (size_t)tag;
    return 0;
}

int igw_srtp_unprotect(igw_srtp *s, uint8_t *buf, size_t *len)
{
    return s ? transform(s->in, buf, len, 0, 12, false, false) : -1;
}

int igw_srtp_protect_rtcp(igw_srtp *s, uint8_t *buf, size_t *len, size_t cap)
{
    return s ? transform(s->out, buf, len, cap, 8, true, true) : -1;
}

int igw_srtp_unprotect_rtcp(igw_srtp *s, uint8_t *buf, size_t *len)
{
    return s ? transform(s->in, buf, len, 0, 8, false, true) : -1;
}
