/* rtp.h - RTP and RTCP packets as the forwarding unit sees them: header parse
 * and rewrite, H264 keyframe detection, RTCP feedback parse and build, the
 * per-viewer sequence/timestamp rewriter and the per-source packet history
 * that answers NACKs. Pure functions over caller buffers; no allocation except
 * igw_rtp_history_new. Every parse is bounded by the given length. */
#ifndef IGW_RTP_H
#define IGW_RTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_RTP_MTU 1500 /* largest packet handled (plain or protected) */

/* ---- demultiplexing (RFC 7983 and RFC 5761) ---- */

typedef enum { IGW_PKT_UNKNOWN, IGW_PKT_STUN, IGW_PKT_DTLS, IGW_PKT_RTP, IGW_PKT_RTCP } igw_pkt_kind;

/* Classifies a datagram by its first bytes: 0..3 STUN, 20..63 DTLS, 128..191
 * RTP or RTCP (second byte's payload type 192..223 = RTCP). UNKNOWN for
 * anything else, fewer than 2 bytes, RTP under 12 bytes or RTCP under 8. */
igw_pkt_kind igw_pkt_classify(const uint8_t *p, size_t n);

/* ---- RTP ---- */

typedef struct igw_rtp_hdr {
    uint8_t  pt;
    bool     marker;
    uint16_t seq;
    uint32_t ts;
    uint32_t ssrc;
    size_t   hdr_len;     /* fixed header + CSRCs + extension */
    size_t   payload_len; /* excluding padding */
} igw_rtp_hdr;

/* Parses an RTP header (version 2, CSRC list, extension, padding) from p[0..n).
 * false when malformed or truncated (header, extension or padding count past
 * the end, padding count 0). The payload is p[hdr_len .. hdr_len+payload_len). */
bool igw_rtp_parse(const uint8_t *p, size_t n, igw_rtp_hdr *h);

/* Overwrites payload type (keeping the marker bit), sequence number, timestamp
 * and SSRC of the RTP packet in p (at least 12 bytes). */
void igw_rtp_rewrite(uint8_t *p, uint8_t pt, uint16_t seq, uint32_t ts, uint32_t ssrc);

/* The RFC 6464 audio level in the header extension `id` (RFC 8285 one-byte
 * or two-byte form) of the packet p[0..n) parsed into h: 0..127, the level in
 * -dBov (0 loudest, 127 silence), or -1 when the packet has no such element
 * or its extension block is malformed. */
int igw_rtp_audio_level(const uint8_t *p, size_t n, const igw_rtp_hdr *h, uint8_t id);

/* Copies the packet p (parsed into h) into out[0..cap) without its CSRCs,
 * header extension and padding: the fixed header (marker, payload type,
 * seq, ts, SSRC as they are) and the payload. Returns the length, or 0 when
 * cap is too small. What another peer's extension ids mean is not ours to
 * forward. */
size_t igw_rtp_strip(const uint8_t *p, const igw_rtp_hdr *h, uint8_t *out, size_t cap);

/* True when an H264 RTP payload (RFC 6184: single NAL, STAP-A, FU-A start
 * fragment) carries an IDR slice (type 5) or a sequence parameter set (7).
 * A STAP-A with a NAL size past the end is not a keyframe; STAP-B, MTAP and
 * FU-B never are. */
bool igw_rtp_h264_keyframe(const uint8_t *payload, size_t n);

/* ---- RTCP ---- */

typedef enum {
    IGW_RTCP_SR, IGW_RTCP_RR, IGW_RTCP_SDES, IGW_RTCP_BYE,
    IGW_RTCP_PLI, IGW_RTCP_FIR, IGW_RTCP_NACK, IGW_RTCP_REMB, IGW_RTCP_OTHER,
} igw_rtcp_kind;

/* One item found while walking a compound packet. For NACK, one item per lost
 * sequence number (pid and each set bit of blp); for FIR one per FCI entry
 * (media_ssrc = the FCI's SSRC). For SR: ntp, rtp_ts, packets, octets set.
 * BYE: one item per SSRC listed (sender_ssrc). SDES: sender_ssrc = the first
 * chunk's SSRC. REMB: media_ssrc = the first SSRC it applies to (0 if none).
 * PLI, NACK, OTHER feedback: media_ssrc = the header's media source SSRC. */
typedef struct igw_rtcp_item {
    igw_rtcp_kind kind;
    uint32_t sender_ssrc;
    uint32_t media_ssrc;
    uint16_t seq;        /* NACK: lost sequence number */
    uint8_t  fir_seq;    /* FIR: command sequence number */
    uint64_t ntp;        /* SR */
    uint32_t rtp_ts, packets, octets; /* SR */
} igw_rtcp_item;

typedef void (*igw_rtcp_visit_fn)(void *ud, const igw_rtcp_item *item);

/* Walks a (decrypted, SRTCP trailer removed) compound RTCP packet, calling
 * visit (may be NULL) for each item. Returns the number of items, or -1 when
 * the compound is malformed: bad version, a length or padding past the end, a
 * count that does not fit (items before the malformed part have been visited).
 * Stops after 256 items and returns 256, without looking further. */
int igw_rtcp_walk(const uint8_t *p, size_t n, igw_rtcp_visit_fn visit, void *ud);

/* Builders: each writes one RTCP packet into buf and returns its length, or 0
 * if cap is too small. */
size_t igw_rtcp_write_pli(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc);
size_t igw_rtcp_write_fir(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc, uint8_t fir_seq);
size_t igw_rtcp_write_sr(uint8_t *buf, size_t cap, uint32_t ssrc, uint64_t ntp, uint32_t rtp_ts,
                         uint32_t packets, uint32_t octets);
/* One reception report block (RFC 3550 6.4.1) about a source we receive. */
typedef struct igw_rtcp_report {
    uint32_t ssrc;          /* the source reported on */
    uint8_t  fraction_lost; /* since the previous report, in 1/256 */
    int32_t  cumulative_lost; /* clamped to 24-bit signed */
    uint32_t ext_highest_seq;
    uint32_t jitter;        /* interarrival jitter, RTP timestamp units */
    uint32_t lsr;           /* middle 32 bits of the last SR's NTP time, 0 = none */
    uint32_t dlsr;          /* delay since that SR, 1/65536 s */
} igw_rtcp_report;

/* Receiver report from ssrc with up to 31 report blocks (none keeps a
 * sender's RTCP alive). */
size_t igw_rtcp_write_rr(uint8_t *buf, size_t cap, uint32_t ssrc, const igw_rtcp_report *blocks, size_t nblocks);
/* Generic NACK for the given lost sequence numbers, in any order, duplicates
 * allowed (packed into pid/blp pairs, each covering pid..pid+16, in serial
 * order from seqs[0]'s point of view, so they should lie within 2^15 of it).
 * When not all fit in cap, the earliest ones are sent. 0 if nseqs is 0 or cap
 * holds less than one FCI (16 bytes). */
size_t igw_rtcp_write_nack(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc,
                           const uint16_t *seqs, size_t nseqs);

/* NTP timestamp (RFC 3550 64-bit) of a wall-clock time in microseconds since the Unix epoch
 * (seconds since 1900 in the high word, modulo 2^32; the fraction in the low word). */
uint64_t igw_rtp_ntp_from_unix_us(uint64_t unix_us);

/* ---- the per-viewer rewriter ---- */

/* Maps a source's (seq, ts) onto one viewer's continuous output stream. The
 * mapping is an offset, so reordering in the source survives; a rebase (pause
 * then resume, or a new source SSRC) makes the next packet continue right after
 * the last one sent, with the timestamp advanced by the wall time elapsed. */
typedef struct igw_rtp_rewriter {
    uint32_t clock;         /* RTP clock rate of the track */
    bool     started;       /* a packet has been mapped since init */
    bool     rebase;        /* next packet starts a new mapping */
    uint16_t seq_delta;
    uint32_t ts_delta;
    uint16_t last_seq;      /* highest output seq sent (serial arithmetic) */
    uint32_t last_ts;
    uint64_t last_us;       /* when last_ts was sent */
    uint16_t base_seq;      /* first output seq of the current mapping (moved up to
                               stay within 2^15 of last_seq on a long mapping) */
} igw_rtp_rewriter;

/* The first mapped packet comes out as (first_seq, first_ts): random values the
 * caller picks per viewer. */
void igw_rtp_rewriter_init(igw_rtp_rewriter *r, uint32_t clock, uint16_t first_seq, uint32_t first_ts);

/* Marks the next mapped packet as the start of a new mapping: it gets
 * last_seq + 1 and last_ts + max(1, ticks elapsed since last_us). */
void igw_rtp_rewriter_rebase(igw_rtp_rewriter *r);

/* Maps an input packet; writes the output seq/ts. now_us is a monotonic clock.
 * A packet from before the start of the current mapping (reordered across a
 * rebase) comes out before base_seq and could repeat a seq already sent: drop
 * it when igw_rtp_rewriter_unmap of its output seq fails. */
void igw_rtp_rewriter_map(igw_rtp_rewriter *r, uint16_t in_seq, uint32_t in_ts, uint64_t now_us,
                          uint16_t *out_seq, uint32_t *out_ts);

/* The input sequence number an output seq of the current mapping came from;
 * false if out_seq predates the current mapping or is ahead of last_seq. */
bool igw_rtp_rewriter_unmap(const igw_rtp_rewriter *r, uint16_t out_seq, uint16_t *in_seq);

/* ---- the talk floor: several senders, one continuous output stream ---- */

/* Senders are named by a nonzero opaque value. One holds the floor: its
 * packets are mapped onto the output stream (an igw_rtp_rewriter: at each
 * change of holder or of its SSRC the stream continues right after the last
 * packet sent, the timestamp advanced by the wall time elapsed). The holder
 * keeps the floor while it shows activity; after hold_us without any, or
 * when released, the next active sender takes it. */
typedef struct igw_rtp_floor {
    igw_rtp_rewriter rw;
    uintptr_t        holder;     /* 0: free */
    uint32_t         holder_ssrc;
    uint64_t         active_us;  /* the holder's last activity */
    uint64_t         hold_us;
} igw_rtp_floor;

void igw_rtp_floor_init(igw_rtp_floor *f, uint32_t clock, uint16_t first_seq, uint32_t first_ts, uint64_t hold_us);

typedef enum {
    IGW_FLOOR_FORWARD,   /* send it as (*out_seq, *out_ts) */
    IGW_FLOOR_BUSY,      /* another sender holds the floor */
    IGW_FLOOR_IDLE,      /* free floor, and this packet shows no activity */
    IGW_FLOOR_LATE,      /* the holder's packet from before its current mapping */
} igw_floor_rc;

/* One packet (seq, ts, ssrc of h) from sender `who`, `active` when it shows
 * activity, at now_us (monotonic). A holder silent for hold_us loses the
 * floor on the first packet seen after that, from anyone. */
igw_floor_rc igw_rtp_floor_map(igw_rtp_floor *f, uintptr_t who, bool active, const igw_rtp_hdr *h, uint64_t now_us,
                               uint16_t *out_seq, uint32_t *out_ts);

/* `who` gives the floor up at once if it holds it (its gate closed, it left). */
void igw_rtp_floor_release(igw_rtp_floor *f, uintptr_t who);

/* ---- the per-source history (answers NACKs for every viewer) ---- */

typedef struct igw_rtp_history igw_rtp_history;

/* A ring of `slots` (power of two, 16..4096) plain RTP packets indexed by seq,
 * allocated at once (slots * ~1.5 KB). NULL for any other slot count or no memory. */
igw_rtp_history *igw_rtp_history_new(size_t slots);
void igw_rtp_history_free(igw_rtp_history *h);

/* Stores a copy of packet p (n <= IGW_RTP_MTU) under seq, replacing the slot's older packet.
 * Stores nothing when n is 0 or above IGW_RTP_MTU. */
void igw_rtp_history_put(igw_rtp_history *h, uint16_t seq, const uint8_t *p, size_t n);

/* The stored packet for seq (and its length), or NULL if absent or overwritten. */
const uint8_t *igw_rtp_history_get(const igw_rtp_history *h, uint16_t seq, size_t *n);

#endif
