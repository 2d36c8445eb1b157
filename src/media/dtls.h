/* dtls.h - DTLS-SRTP for one WebRTC transport: OpenSSL DTLS 1.2 over memory
 * BIOs (datagrams in and out go through the caller's ICE transport), the peer's
 * certificate checked against the fingerprint from its SDP, SRTP keys exported
 * (RFC 5764) into libsrtp2 sessions, except for outbound RTP: the per-viewer
 * hot path is protected with OpenSSL contexts kept for the session (Debian's
 * libsrtp2 goes through NSS, which sets up a context for every packet).
 *
 * Not thread-safe per object: one transport is driven by one thread. The
 * certificate is shared read-only by every transport of the process. */
#ifndef IGW_DTLS_H
#define IGW_DTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the process certificate ---- */

typedef struct igw_dtls_cert igw_dtls_cert;

/* A fresh self-signed ECDSA P-256 certificate (valid 30 days) and its SSL_CTX
 * (DTLS 1.2, use_srtp AEAD_AES_128_GCM then AES128_CM_SHA1_80). NULL + err. */
igw_dtls_cert *igw_dtls_cert_new(char *err, size_t errlen);
void igw_dtls_cert_free(igw_dtls_cert *c);

/* SHA-256 fingerprint of the certificate: 32 raw bytes, and the SDP text form
 * ("AB:CD:...", 95 characters). */
const uint8_t *igw_dtls_cert_fp(const igw_dtls_cert *c);
const char *igw_dtls_cert_fp_text(const igw_dtls_cert *c);

/* Restricts the offered SRTP profiles (tests, interop), e.g.
 * "SRTP_AES128_CM_SHA1_80", in OpenSSL's use_srtp syntax. Affects transports
 * created afterwards; call before the certificate is shared. 0, or -1 on an
 * unknown profile name (the previous list stays). */
int igw_dtls_cert_set_profiles(igw_dtls_cert *c, const char *profiles);

/* ---- one DTLS transport ---- */

typedef struct igw_dtls igw_dtls;

typedef enum { IGW_DTLS_CLIENT, IGW_DTLS_SERVER } igw_dtls_role;
typedef enum { IGW_DTLS_NEW, IGW_DTLS_HANDSHAKING, IGW_DTLS_CONNECTED, IGW_DTLS_FAILED, IGW_DTLS_CLOSED } igw_dtls_state;

/* Outgoing datagrams (handshake flights, alerts) are handed to send(ud, p, n),
 * each at most 1200 bytes and made of whole DTLS records. It is called from
 * inside the igw_dtls_* calls and must not call back into the same transport. */
typedef void (*igw_dtls_send_fn)(void *ud, const uint8_t *p, size_t n);

/* A transport in `role`, expecting the peer certificate's SHA-256 to be
 * peer_fp[0..32). NULL + err on allocation failure. */
igw_dtls *igw_dtls_new(igw_dtls_cert *cert, igw_dtls_role role, const uint8_t peer_fp[32],
                       igw_dtls_send_fn send, void *ud, char *err, size_t errlen);
void igw_dtls_free(igw_dtls *d);

/* Where its records go from now on (a transport handed to a new ICE path:
 * igw_peer_continue). */
void igw_dtls_set_send(igw_dtls *d, igw_dtls_send_fn send, void *ud);

/* Starts the handshake (a client sends its ClientHello; a server waits) and
 * its 30-second limit. */
igw_dtls_state igw_dtls_start(igw_dtls *d);

/* Feeds one datagram received from the peer. Returns the state after it:
 * CONNECTED once the handshake finished and the fingerprint matched (and stays
 * CONNECTED for later records), FAILED with igw_dtls_reason set otherwise,
 * CLOSED after the peer's close_notify. A datagram arriving before
 * igw_dtls_start starts the transport; malformed records are dropped, as DTLS
 * does; application data (no data channels) is discarded. */
igw_dtls_state igw_dtls_feed(igw_dtls *d, const uint8_t *p, size_t n);

/* Microseconds until the retransmission timer or the handshake limit fires
 * (0 = now), or -1 when no timer is running (always -1 once FAILED or CLOSED).
 * Call igw_dtls_on_timer when it fires; FAILED "handshake timeout" once the
 * handshake took 30 s or OpenSSL gave up retransmitting. */
int64_t igw_dtls_timeout_us(igw_dtls *d);
igw_dtls_state igw_dtls_on_timer(igw_dtls *d);

/* Sends close_notify (if connected) and moves to CLOSED; a FAILED transport
 * stays FAILED with its reason. */
void igw_dtls_close(igw_dtls *d);

igw_dtls_state igw_dtls_state_get(const igw_dtls *d);

/* Why the transport failed ("fingerprint mismatch", "handshake timeout",
 * "no SRTP profile", "alert: ..."), "" otherwise. */
const char *igw_dtls_reason(const igw_dtls *d);

/* ---- SRTP ---- */

typedef enum { IGW_SRTP_AEAD_AES_128_GCM, IGW_SRTP_AES128_CM_SHA1_80 } igw_srtp_profile;

typedef struct igw_srtp igw_srtp;

/* Longest RTP/RTCP packet accepted for protect (unprotect: plus the trailer). */
#define IGW_SRTP_MAX_PACKET 1500
/* Bytes protect may append: a 16-byte tag plus the 4-byte SRTCP index (no MKI
 * is used, so libsrtp's SRTP_MAX_TRAILER_LEN, which allows a 128-byte MKI, is
 * more than is ever written). */
#define IGW_SRTP_MAX_TRAILER 20

/* After CONNECTED: the negotiated profile. */
igw_srtp_profile igw_dtls_srtp_profile(const igw_dtls *d);

/* After CONNECTED: an SRTP context keyed from the exported material (our write
 * key for protect, the peer's for unprotect). NULL + err. */
igw_srtp *igw_dtls_srtp_new(const igw_dtls *d, char *err, size_t errlen);
void igw_srtp_free(igw_srtp *s);

/* Outbound RTP SSRCs one context keeps a rollover counter for (a viewer
 * sends audio and video); an RTP packet of a further SSRC is refused. */
#define IGW_SRTP_MAX_OUT_SSRC 8

/* In-place transforms. *len is updated. Protect needs cap >= *len +
 * IGW_SRTP_MAX_TRAILER (16 + 4) and *len <= IGW_SRTP_MAX_PACKET;
 * re-protecting an RTP packet already sent (a retransmission) is allowed
 * and gives the same bytes, as long as it is fewer than 1024 packets behind
 * the newest one sent on its SSRC (libsrtp's replay window, which it keeps
 * for outbound streams too). RTP protect writes exactly what libsrtp would
 * for the same keys and packets.
 * Each returns 0, or -1 (authentication failure, replay, bad packet or length,
 * too many SSRCs) leaving the buffer content unspecified. */
int igw_srtp_protect(igw_srtp *s, uint8_t *buf, size_t *len, size_t cap);
int igw_srtp_unprotect(igw_srtp *s, uint8_t *buf, size_t *len);
int igw_srtp_protect_rtcp(igw_srtp *s, uint8_t *buf, size_t *len, size_t cap);
int igw_srtp_unprotect_rtcp(igw_srtp *s, uint8_t *buf, size_t *len);

#endif
