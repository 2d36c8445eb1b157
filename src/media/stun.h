/* stun.h - STUN Binding as an ICE-lite agent speaks it (RFC 8489, RFC 8445
 * 2.5 and 7.3): it answers the peer's checks and sends none.
 *
 * Pure functions over byte buffers: no socket, no state, no allocation;
 * any thread. Everything read is bounded by the length given. The media
 * core's per-thread socket (one for every ICE-lite peer) uses it to tell a
 * check from media (RFC 7983: a first byte of 0..3), to find the peer by
 * the USERNAME's first half (our ufrag), and to answer it. */
#ifndef IGW_STUN_H
#define IGW_STUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#define IGW_STUN_HEADER 20
#define IGW_STUN_TID 12
/* The longest message igw writes: a header, XOR-MAPPED-ADDRESS (IPv6),
 * SOFTWARE, MESSAGE-INTEGRITY, FINGERPRINT, or an ERROR-CODE with its
 * reason; callers size their buffers with it. */
#define IGW_STUN_REPLY_MAX 256

/* What a Binding request says. username points into the message. */
typedef struct igw_stun_request {
    uint8_t        tid[IGW_STUN_TID];
    const uint8_t *username; /* "<receiver's ufrag>:<sender's ufrag>", not NUL-terminated */
    size_t         username_len;
    uint32_t       priority;      /* PRIORITY, 0 when absent */
    bool           use_candidate; /* USE-CANDIDATE: the controlling side nominates this pair */
    bool           controlling;   /* ICE-CONTROLLING present */
    bool           controlled;    /* ICE-CONTROLLED present */
    bool           integrity;     /* a MESSAGE-INTEGRITY is present (checked by igw_stun_check_integrity) */
} igw_stun_request;

typedef enum igw_stun_status {
    IGW_STUN_OK = 0,
    IGW_STUN_NOT_STUN,      /* not a STUN message: media or garbage (no magic cookie, bad length) */
    IGW_STUN_NOT_REQUEST,   /* STUN, but not a Binding request (a response, an indication, another method) */
    IGW_STUN_MALFORMED,     /* an attribute runs past the end, or one that must come last does not */
    IGW_STUN_BAD_FINGERPRINT,
    IGW_STUN_NO_USERNAME,   /* a check without USERNAME or MESSAGE-INTEGRITY (400) */
    IGW_STUN_UNKNOWN_REQUIRED /* a comprehension-required attribute igw does not know (420) */
} igw_stun_status;

/* RFC 7983's first test: the first byte is 0..3 and there is room for a
 * header. Cheap, for the receive path; a true answer still needs
 * igw_stun_parse_request. */
static inline bool igw_stun_maybe(const uint8_t *p, size_t n)
{
    return n >= IGW_STUN_HEADER && p[0] < 4;
}

/* Parses a Binding request: header (type 0x0001, magic cookie, length a
 * multiple of 4 that matches n), attributes in bounds, FINGERPRINT (when
 * present) last and correct, MESSAGE-INTEGRITY followed by nothing but
 * FINGERPRINT. Fills *out on IGW_STUN_OK. */
igw_stun_status igw_stun_parse_request(const uint8_t *p, size_t n, igw_stun_request *out);

/* True when the message is STUN and ends with a correct FINGERPRINT
 * (CRC-32 of what precedes it, xor 0x5354554e). */
bool igw_stun_check_fingerprint(const uint8_t *p, size_t n);

/* True when the message's MESSAGE-INTEGRITY is the HMAC-SHA1 of what
 * precedes it keyed with `pwd` (ICE's short-term credential: the password
 * as it is), for any STUN message (a request or a response). False
 * without one or when the message is malformed. Compared in constant time. */
bool igw_stun_check_integrity(const uint8_t *p, size_t n, const char *pwd, size_t pwd_len);

/* Writes a Binding success response to transaction `tid`: XOR-MAPPED-ADDRESS
 * of `from` (AF_INET or AF_INET6), SOFTWARE when `software` is not NULL,
 * MESSAGE-INTEGRITY keyed with `pwd`, FINGERPRINT. Returns its length, or
 * 0 when it does not fit `cap` or the address family is neither. */
size_t igw_stun_success(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], const struct sockaddr *from,
                        const char *software, const char *pwd, size_t pwd_len);

/* Writes a Binding request (what a full agent sends; igw's tests and a
 * consent check use it): USERNAME, PRIORITY, ICE-CONTROLLING with
 * `tiebreaker` when `controlling` (else ICE-CONTROLLED), USE-CANDIDATE when
 * `nominate`, MESSAGE-INTEGRITY keyed with `pwd`, FINGERPRINT. Returns its
 * length, or 0 when it does not fit `cap`. */
size_t igw_stun_request_write(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], const char *username,
                              uint32_t priority, bool controlling, uint64_t tiebreaker, bool nominate, const char *pwd,
                              size_t pwd_len);

/* Writes a Binding error response (ERROR-CODE `code` 300..699 with
 * `reason`, at most 128 bytes of it kept; MESSAGE-INTEGRITY when `pwd` is
 * not NULL; FINGERPRINT). Returns its length, or 0 as above. */
size_t igw_stun_error(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], int code, const char *reason,
                      const char *pwd, size_t pwd_len);

#endif
