/* devauth.h - device credentials compatible with iThings devices.
 *
 * A device authenticates (MQTT CONNECT or HTTP Basic) with
 *   username  {productID}&{deviceName};12010126;{connid};{expiry}
 *   password  hex(HMAC-SHA256(key=base64decode(deviceSecret), msg=username));hmacsha256
 *             (or the same with SHA1 and ";hmacsha1")
 * where connid is 5 random [A-Za-z0-9] and expiry is Unix seconds, and
 * deviceSecret is the base64 of random bytes (igw makes 20).
 *
 * Typical server flow:
 *   igw_devauth_parse_basic(hdr, len, user, sizeof user, pass, sizeof pass)
 *   igw_devauth_parse_username(user, strlen(user), &u)   -> look up u's secret
 *   igw_devauth_secret_decode(secret_b64, key, sizeof key, &keylen)
 *   igw_devauth_verify(user, pass, key, keylen, now, &id)  (key NULL if unknown)
 * Every failure, whatever its code, must reach the client only as
 * "unauthenticated"; the codes are for logs and tests. */
#ifndef IGW_DEVAUTH_H
#define IGW_DEVAUTH_H

#include <stddef.h>
#include <stdint.h>

#define IGW_DEVAUTH_SDKAPPID "12010126"
#define IGW_DEVAUTH_NAME_MAX 64   /* bytes of a productID or deviceName */
#define IGW_DEVAUTH_CONNID_LEN 5
#define IGW_DEVAUTH_EXPIRY_MAX INT64_C(9007199254740991) /* 2^53 - 1 */
/* Longest username: 64 & 64 ;12010126 ;5 ;16 digits. */
#define IGW_DEVAUTH_USER_MAX (2 * IGW_DEVAUTH_NAME_MAX + 1 + 1 + 8 + 1 + 5 + 1 + 16)
/* Longest password: 64 hex digits + ";hmacsha256". */
#define IGW_DEVAUTH_PASS_MAX (64 + 11)
/* Longest accepted Authorization value: "Basic " + base64(user ":" pass). */
#define IGW_DEVAUTH_BASIC_MAX (6 + 4 * ((IGW_DEVAUTH_USER_MAX + 1 + IGW_DEVAUTH_PASS_MAX + 2) / 3))
#define IGW_DEVAUTH_SECRET_LEN 20 /* bytes igw generates */
#define IGW_DEVAUTH_SECRET_MIN 16 /* bytes accepted when decoding (imported devices) */
#define IGW_DEVAUTH_SECRET_MAX 64
#define IGW_DEVAUTH_SECRET_B64_MAX (4 * ((IGW_DEVAUTH_SECRET_MAX + 2) / 3))

/* Result codes of igw_devauth_verify. Distinct for logs and tests only. */
enum {
    IGW_DEVAUTH_OK = 0,
    IGW_DEVAUTH_EUSERNAME = -1, /* username malformed */
    IGW_DEVAUTH_EPASSWORD = -2, /* password malformed (length, suffix, non lower-case hex) */
    IGW_DEVAUTH_ESECRET = -3,   /* secret empty or too long */
    IGW_DEVAUTH_EUNKNOWN = -4,  /* no secret given (unknown device); same work was done */
    IGW_DEVAUTH_EMISMATCH = -5, /* signature does not match */
    IGW_DEVAUTH_EEXPIRED = -6,  /* signature matches but expiry <= now */
    IGW_DEVAUTH_EINTERNAL = -7  /* libcrypto failure */
};

typedef struct igw_devauth_username {
    char product_id[IGW_DEVAUTH_NAME_MAX + 1];
    char device_name[IGW_DEVAUTH_NAME_MAX + 1];
    char connid[IGW_DEVAUTH_CONNID_LEN + 1];
    int64_t expiry; /* 1 .. 2^53-1 */
} igw_devauth_username;

typedef struct igw_devauth_identity {
    char product_id[IGW_DEVAUTH_NAME_MAX + 1];
    char device_name[IGW_DEVAUTH_NAME_MAX + 1];
    int64_t expiry; /* the credential's end; a session may be cut there */
} igw_devauth_identity;

/* A valid productID or deviceName: 1..64 bytes of printable ASCII
 * (0x21..0x7E) other than & ; : + # /. (':' cannot travel in HTTP Basic.)
 * Use it when registering devices. Returns 1 or 0. */
int igw_devauth_name_ok(const char *s, size_t len);

/* Parses an Authorization value "Basic <base64(user:pass)>": scheme
 * case-insensitive, exactly one space, strict padded base64 with zero
 * trailing bits, no leading/trailing whitespace, at most
 * IGW_DEVAUTH_BASIC_MAX bytes; split at the first ':'; no control bytes in
 * either part. Writes NUL-terminated user and pass (each must fit its cap).
 * Returns 0, or -1 (both outputs emptied) without saying why. */
int igw_devauth_parse_basic(const char *hdr, size_t len, char *user, size_t ucap, char *pass,
                            size_t pcap);

/* Parses a username (see the top of this file). Returns 0 or -1 (out zeroed). */
int igw_devauth_parse_username(const char *s, size_t len, igw_devauth_username *out);

/* Verifies a device's username and password against its raw secret.
 * Order: username syntax, password syntax, signature (constant-time digest
 * compare), then expiry > now_s. secret NULL means the device is unknown:
 * the HMAC is still computed (against a dummy key) and EUNKNOWN returned.
 * On success fills *out (may be NULL); on failure *out is zeroed.
 * Returns IGW_DEVAUTH_OK or a negative IGW_DEVAUTH_E* code. */
int igw_devauth_verify(const char *username, const char *password, const unsigned char *secret,
                       size_t secret_len, int64_t now_s, igw_devauth_identity *out);

/* Decodes a deviceSecret: strict padded base64 of SECRET_MIN..SECRET_MAX
 * bytes, NUL-terminated string. Decoding is constant-time in the secret's
 * content. Returns 0 (*len set) or -1. */
int igw_devauth_secret_decode(const char *b64, unsigned char *out, size_t cap, size_t *len);

/* Makes a new deviceSecret: base64 of SECRET_LEN bytes from RAND_bytes
 * (28 chars + NUL; cap >= 29). Returns 0 or -1. */
int igw_devauth_secret_new(char *b64, size_t cap);

/* Builds a username with a random connid and its password for the given
 * device, secret and expiry (1..2^53-1); sha1 != 0 selects hmacsha1.
 * Returns 0 or -1 (bad input, buffer too small, RNG failure). */
int igw_devauth_sign(const char *product, const char *device, const char *secret_b64,
                     int64_t expiry, int sha1, char *username, size_t ucap, char *password,
                     size_t pcap);

/* Writes "Basic " + base64(user ":" pass), NUL-terminated. user must not
 * contain ':'; neither may contain control bytes. Returns 0 or -1. */
int igw_devauth_basic(const char *user, const char *pass, char *out, size_t cap);

/* A short name of a result code, for logs ("username", "expired", ...). */
const char *igw_devauth_strerror(int code);

#endif
