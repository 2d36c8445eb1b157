/* rtp.c - RTP/RTCP parse, build and rewrite (see rtp.h). Every read from a
 * packet is checked against its length first; packets come off the network. */
#include "rtp.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define RTCP_MAX_ITEMS 256

/* RFC 1982 on 16 bits: a is after b. */
static bool seq_after(uint16_t a, uint16_t b)
{
    uint16_t d = (uint16_t)(a - b);
    return d != 0 && d < 0x8000;
}

/* ---- demultiplexing ------------------------------------------------------------ */

igw_pkt_kind igw_pkt_classify(const uint8_t *p, size_t n)
{
    if (n < 2)
        return IGW_PKT_UNKNOWN;
    uint8_t b = p[0];
    if (b <= 3)
        return IGW_PKT_STUN;
    if (b >= 20 && b <= 63)
        return IGW_PKT_DTLS;
    if (b >= 128 && b <= 191) {
        /* RFC 5761: RTCP packet types 192..223 show as 64..95 once the bit
         * that would be RTP's marker is dropped. */
        uint8_t pt = p[1] & 0x7f;
        if (pt >= 64 && pt <= 95)
            return n >= 8 ? IGW_PKT_RTCP : IGW_PKT_UNKNOWN;
        return n >= 12 ? IGW_PKT_RTP : IGW_PKT_UNKNOWN;
    }
    return IGW_PKT_UNKNOWN;
}

/* ---- RTP --------------------------------------------------------------------------- */

bool igw_rtp_parse(const uint8_t *p, size_t n, igw_rtp_hdr *h)
{
    if (n < 12 || p[0] >> 6 != 2)
        return false;
    size_t len = 12 + 4 * (size_t)(p[0] & 0x0f);
    if (len > n)
        return false;
    if (p[0] & 0x10) { /* extension: 16-bit profile, 16-bit length in words */
        if (len + 4 > n)
            return false;
        len += 4 + 4 * (size_t)igw_rd16(p + len + 2);
        if (len > n)
            return false;
    }
    size_t pad = 0;
    if (p[0] & 0x20) { /* padding: its last byte counts itself too */
        pad = p[n - 1];
        if (pad == 0 || pad > n - len)
            return false;
    }
    h->pt = p[1] & 0x7f;
    h->marker = (p[1] & 0x80) != 0;
    h->seq = igw_rd16(p + 2);
    h->ts = igw_rd32(p + 4);
    h->ssrc = igw_rd32(p + 8);
    h->hdr_len = len;
    h->payload_len = n - len - pad;
    return true;
}

void igw_rtp_rewrite(uint8_t *p, uint8_t pt, uint16_t seq, uint32_t ts, uint32_t ssrc)
{
    p[1] = (uint8_t)((p[1] & 0x80) | (pt & 0x7f));
    igw_wr16(p + 2, seq);
    igw_wr32(p + 4, ts);
    igw_wr32(p + 8, ssrc);
}

int igw_rtp_audio_level(const uint8_t *p, size_t n, const igw_rtp_hdr *h, uint8_t id)
{
    if (id == 0 || !(p[0] & 0x10))
        return -1;
    size_t off = 12 + 4 * (size_t)(p[0] & 0x0f);
    if (off + 4 > h->hdr_len || h->hdr_len > n)
        return -1;
    uint16_t profile = igw_rd16(p + off);
    size_t end = off + 4 + 4 * (size_t)igw_rd16(p + off + 2);
    if (end != h->hdr_len)
        return -1;
    bool one = profile == 0xBEDE, two = (profile & 0xfff0) == 0x1000;
    if (!one && !two)
        return -1;
    for (size_t i = off + 4; i < end;) {
        if (p[i] == 0) { /* padding between elements */
            i++;
            continue;
        }
        unsigned eid, len;
        if (one) {
            eid = p[i] >> 4;
            len = (p[i] & 0x0f) + 1u;
            if (eid == 15)
                return -1; /* RFC 8285: stop parsing */
            i++;
        } else {
            if (i + 2 > end)
                return -1;
            eid = p[i];
            len = p[i + 1];
            i += 2;
        }
        if (len > end - i)
            return -1;
        if (eid == id)
            return len >= 1 ? (p[i] & 0x7f) : -1;
        i += len;
    }
    return -1;
}

size_t igw_rtp_strip(const uint8_t *p, const igw_rtp_hdr *h, uint8_t *out, size_t cap)
{
    if (cap < 12 || h->payload_len > cap - 12)
        return 0;
    out[0] = 0x80; /* version 2, no padding, extension or CSRC */
    memcpy(out + 1, p + 1, 11);
    memcpy(out + 12, p + h->hdr_len, h->payload_len);
    return 12 + h->payload_len;
}

static bool h264_key_nal(uint8_t nal_hdr)
{
    uint8_t t = nal_hdr & 0x1f;
    return t == 5 || t == 7;
}

bool igw_rtp_h264_keyframe(const uint8_t *payload, size_t n)
{
    if (n < 1)
        return false;
    uint8_t type = payload[0] & 0x1f;
    if (type >= 1 && type <= 23)
        return h264_key_nal(payload[0]);
    if (type == 24) { /* STAP-A: (16-bit size, NAL)* after the STAP header */
        size_t off = 1;
        while (off + 2 <= n) {
            size_t sz = igw_rd16(payload + off);
            off += 2;
            if (sz == 0 || sz > n - off)
                return false; /* malformed: trust nothing in it */
            if (h264_key_nal(payload[off]))
                return true;
            off += sz;
        }
        return false;
    }
    if (type == 28) /* FU-A: the start fragment carries the NAL type */
        return n >= 2 && (payload[1] & 0x80) && h264_key_nal(payload[1]);
    return false; /* STAP-B, MTAP, FU-B: not used by WebRTC senders */
}

/* ---- RTCP walk ------------------------------------------------------------------- */

typedef struct walker {
    igw_rtcp_visit_fn visit;
    void *ud;
    int count;
} walker;

/* Visits one item; false once the item cap is reached. */
static bool emit(walker *w, const igw_rtcp_item *it)
{
    if (w->count >= RTCP_MAX_ITEMS)
        return false;
    w->count++;
    if (w->visit)
        w->visit(w->ud, it);
    return true;
}

/* One RTCP packet p[0..len) with padding already removed (len >= 4).
 * Returns 1 to go on, 0 when the item cap was reached, -1 when malformed. */
static int walk_one(walker *w, const uint8_t *p, size_t len)
{
    uint8_t count = p[0] & 0x1f, pt = p[1];
    igw_rtcp_item it;
    memset(&it, 0, sizeof it);
    if (len >= 8) /* every type but an empty SDES or BYE starts with an SSRC */
        it.sender_ssrc = igw_rd32(p + 4);

    switch (pt) {
    case 200: /* SR: ssrc, ntp, rtp ts, packets, octets, then report blocks */
        if (len < 28 || (len - 28) / 24 < count)
            return -1;
        it.kind = IGW_RTCP_SR;
        it.ntp = (uint64_t)igw_rd32(p + 8) << 32 | igw_rd32(p + 12);
        it.rtp_ts = igw_rd32(p + 16);
        it.packets = igw_rd32(p + 20);
        it.octets = igw_rd32(p + 24);
        return emit(w, &it) ? 1 : 0;
    case 201: /* RR: ssrc then report blocks */
        if (len < 8 || (len - 8) / 24 < count)
            return -1;
        it.kind = IGW_RTCP_RR;
        return emit(w, &it) ? 1 : 0;
    case 202: /* SDES: chunks start with an SSRC; the first one names the sender */
        if (count > 0 && len < 8)
            return -1;
        if (count == 0)
            it.sender_ssrc = 0;
        it.kind = IGW_RTCP_SDES;
        return emit(w, &it) ? 1 : 0;
    case 203: /* BYE: one item per SSRC leaving */
        if ((len - 4) / 4 < count)
            return -1;
        it.kind = IGW_RTCP_BYE;
        for (size_t i = 0; i < count; i++) {
            it.sender_ssrc = igw_rd32(p + 4 + 4 * i);
            if (!emit(w, &it))
                return 0;
        }
        return 1;
    case 205:   /* RTPFB */
    case 206: { /* PSFB */
        if (len < 12)
            return -1;
        it.media_ssrc = igw_rd32(p + 8);
        const uint8_t *fci = p + 12;
        size_t nfci = len - 12;
        if (pt == 205 && count == 1) { /* generic NACK: (pid, blp)* */
            if (nfci % 4 != 0)
                return -1;
            it.kind = IGW_RTCP_NACK;
            for (size_t off = 0; off < nfci; off += 4) {
                uint16_t pid = igw_rd16(fci + off), blp = igw_rd16(fci + off + 2);
                it.seq = pid;
                if (!emit(w, &it))
                    return 0;
                for (unsigned b = 0; b < 16; b++) {
                    if (!(blp >> b & 1))
                        continue;
                    it.seq = (uint16_t)(pid + 1 + b);
                    if (!emit(w, &it))
                        return 0;
                }
            }
            return 1;
        }
        if (pt == 206 && count == 1) {
            it.kind = IGW_RTCP_PLI;
            return emit(w, &it) ? 1 : 0;
        }
        if (pt == 206 && count == 4) { /* FIR: (ssrc, seq nr, 3 reserved)* */
            if (nfci % 8 != 0)
                return -1;
            it.kind = IGW_RTCP_FIR;
            for (size_t off = 0; off < nfci; off += 8) {
                it.media_ssrc = igw_rd32(fci + off);
                it.fir_seq = fci[off + 4];
                if (!emit(w, &it))
                    return 0;
            }
            return 1;
        }
        if (pt == 206 && count == 15 && nfci >= 4 && memcmp(fci, "REMB", 4) == 0) {
            /* "REMB", num ssrc, exp/mantissa, then the SSRCs it applies to */
            if (nfci < 8 || (nfci - 8) / 4 < fci[4])
                return -1;
            it.kind = IGW_RTCP_REMB;
            it.media_ssrc = fci[4] ? igw_rd32(fci + 8) : 0;
            return emit(w, &it) ? 1 : 0;
        }
        it.kind = IGW_RTCP_OTHER;
        return emit(w, &it) ? 1 : 0;
    }
    default:
        it.kind = IGW_RTCP_OTHER;
        return emit(w, &it) ? 1 : 0;
    }
}

int igw_rtcp_walk(const uint8_t *p, size_t n, igw_rtcp_visit_fn visit, void *ud)
{
    walker w = {visit, ud, 0};
    size_t off = 0;
    if (n == 0)
        return -1;
    while (off < n) {
        if (n - off < 4 || p[off] >> 6 != 2)
            return -1;
        /* The length counts 32-bit words minus one, so every packet takes at
         * least 4 bytes and the loop always advances. */
        size_t len = 4 * ((size_t)igw_rd16(p + off + 2) + 1);
        if (len > n - off)
            return -1;
        size_t body = len;
        if (p[off] & 0x20) { /* padding, counted by the packet's last byte */
            uint8_t pad = p[off + len - 1];
            if (pad == 0 || pad > len - 4)
                return -1;
            body -= pad;
        }
        int rc = walk_one(&w, p + off, body);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        off += len;
    }
    return w.count;
}

/* ---- RTCP builders ---------------------------------------------------------------- */

/* Writes the common header of a packet of len bytes (a multiple of 4). */
static void rtcp_hdr(uint8_t *buf, uint8_t count_fmt, uint8_t pt, size_t len)
{
    buf[0] = (uint8_t)(0x80 | (count_fmt & 0x1f));
    buf[1] = pt;
    igw_wr16(buf + 2, (uint16_t)(len / 4 - 1));
}

size_t igw_rtcp_write_pli(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc)
{
    if (cap < 12)
        return 0;
    rtcp_hdr(buf, 1, 206, 12);
    igw_wr32(buf + 4, sender_ssrc);
    igw_wr32(buf + 8, media_ssrc);
    return 12;
}

size_t igw_rtcp_write_fir(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc,
                          uint8_t fir_seq)
{
    if (cap < 20)
        return 0;
    rtcp_hdr(buf, 4, 206, 20);
    igw_wr32(buf + 4, sender_ssrc);
    igw_wr32(buf + 8, 0); /* RFC 5104 4.3.1.2: the target SSRC goes in the FCI */
    igw_wr32(buf + 12, media_ssrc);
    buf[16] = fir_seq;
    buf[17] = buf[18] = buf[19] = 0;
    return 20;
}

size_t igw_rtcp_write_sr(uint8_t *buf, size_t cap, uint32_t ssrc, uint64_t ntp, uint32_t rtp_ts,
                         uint32_t packets, uint32_t octets)
{
    if (cap < 28)
        return 0;
    rtcp_hdr(buf, 0, 200, 28);
    igw_wr32(buf + 4, ssrc);
    igw_wr32(buf + 8, (uint32_t)(ntp >> 32));
    igw_wr32(buf + 12, (uint32_t)ntp);
    igw_wr32(buf + 16, rtp_ts);
    igw_wr32(buf + 20, packets);
    igw_wr32(buf + 24, octets);
    return 28;
}

size_t igw_rtcp_write_rr(uint8_t *buf, size_t cap, uint32_t ssrc, const igw_rtcp_report *blocks, size_t nblocks)
{
    size_t len = 8 + 24 * nblocks;
    if (nblocks > 31 || cap < len || (nblocks && !blocks))
        return 0;
    rtcp_hdr(buf, (uint8_t)nblocks, 201, len);
    igw_wr32(buf + 4, ssrc);
    for (size_t i = 0; i < nblocks; i++) {
        const igw_rtcp_report *r = &blocks[i];
        uint8_t *b = buf + 8 + 24 * i;
        int32_t lost = r->cumulative_lost > 0x7fffff ? 0x7fffff : r->cumulative_lost < -0x800000 ? -0x800000
                                                                                                 : r->cumulative_lost;
        igw_wr32(b, r->ssrc);
        igw_wr32(b + 4, ((uint32_t)r->fraction_lost << 24) | ((uint32_t)lost & 0xffffff));
        igw_wr32(b + 8, r->ext_highest_seq);
        igw_wr32(b + 12, r->jitter);
        igw_wr32(b + 16, r->lsr);
        igw_wr32(b + 20, r->dlsr);
    }
    return len;
}

/* Position of seq in serial order around ref: -32768..32767. */
static int32_t seq_key(uint16_t seq, uint16_t ref)
{
    uint16_t d = (uint16_t)(seq - ref);
    return d < 0x8000 ? (int32_t)d : (int32_t)d - 65536;
}

size_t igw_rtcp_write_nack(uint8_t *buf, size_t cap, uint32_t sender_ssrc, uint32_t media_ssrc,
                           const uint16_t *seqs, size_t nseqs)
{
    if (nseqs == 0 || cap < 16)
        return 0;
    size_t max_fci = (cap - 12) / 4;
    if (max_fci > 0xffff - 2) /* the length field is 16 bits of words */
        max_fci = 0xffff - 2;
    /* Greedy interval cover from the earliest seq (serial order around the
     * first one): no copy, no sort, any input order, duplicates merge. Each
     * round is one pass over seqs and the rounds are bounded by max_fci. */
    uint16_t ref = seqs[0];
    int32_t done = INT32_MIN; /* keys <= done are already covered */
    size_t nfci = 0;
    while (nfci < max_fci) {
        int32_t pid = INT32_MAX;
        for (size_t i = 0; i < nseqs; i++) {
            int32_t k = seq_key(seqs[i], ref);
            if (k > done && k < pid)
                pid = k;
        }
        if (pid == INT32_MAX)
            break;
        uint16_t blp = 0;
        for (size_t i = 0; i < nseqs; i++) {
            int32_t k = seq_key(seqs[i], ref);
            if (k > pid && k <= pid + 16)
                blp |= (uint16_t)(1u << (k - pid - 1));
        }
        uint8_t *f = buf + 12 + 4 * nfci;
        igw_wr16(f, (uint16_t)(ref + (uint16_t)pid));
        igw_wr16(f + 2, blp);
        nfci++;
        done = pid + 16;
    }
    size_t len = 12 + 4 * nfci;
    rtcp_hdr(buf, 1, 205, len);
    igw_wr32(buf + 4, sender_ssrc);
    igw_wr32(buf + 8, media_ssrc);
    return len;
}

uint64_t igw_rtp_ntp_from_unix_us(uint64_t unix_us)
{
    uint64_t sec = unix_us / 1000000u + 2208988800u; /* 1900 to 1970 */
    uint64_t frac = (unix_us % 1000000u << 32) / 1000000u;
    return (sec & 0xffffffffu) << 32 | frac;
}

/* ---- the rewriter -------------------------------------------------------------------- */

void igw_rtp_rewriter_init(igw_rtp_rewriter *r, uint32_t clock, uint16_t first_seq, uint32_t first_ts)
{
    memset(r, 0, sizeof *r);
    r->clock = clock;
    /* The first packet is a rebase that continues from "one before
     * first_seq at first_ts", with no time advance since nothing was sent. */
    r->rebase = true;
    r->last_seq = (uint16_t)(first_seq - 1);
    r->last_ts = first_ts;
    r->base_seq = first_seq;
}

void igw_rtp_rewriter_rebase(igw_rtp_rewriter *r)
{
    r->rebase = true;
}

/* RTP ticks in elapsed_us at clock Hz, modulo 2^32: the whole seconds wrap
 * harmlessly in 64 bits, the remainder product stays below 2^52. */
static uint64_t ticks(uint64_t elapsed_us, uint32_t clock)
{
    return elapsed_us / 1000000u * clock + elapsed_us % 1000000u * clock / 1000000u;
}

void igw_rtp_rewriter_map(igw_rtp_rewriter *r, uint16_t in_seq, uint32_t in_ts, uint64_t now_us,
                          uint16_t *out_seq, uint32_t *out_ts)
{
    if (r->rebase) {
        uint16_t seq = (uint16_t)(r->last_seq + 1);
        uint32_t ts = r->last_ts;
        if (r->started) {
            uint32_t adv = (uint32_t)ticks(now_us > r->last_us ? now_us - r->last_us : 0, r->clock);
            ts += adv ? adv : 1; /* never repeat the last frame's timestamp */
        }
        r->seq_delta = (uint16_t)(seq - in_seq);
        r->ts_delta = ts - in_ts;
        r->base_seq = seq;
        r->last_seq = seq;
        r->last_ts = ts;
        r->last_us = now_us;
        r->rebase = false;
        r->started = true;
        *out_seq = seq;
        *out_ts = ts;
        return;
    }
    *out_seq = (uint16_t)(in_seq + r->seq_delta);
    *out_ts = in_ts + r->ts_delta;
    if (seq_after(*out_seq, r->last_seq)) {
        r->last_seq = *out_seq;
        r->last_ts = *out_ts;
        r->last_us = now_us;
        /* Keep the mapping's window within half the sequence space so that
         * serial order stays meaningful for unmap on a long mapping. */
        if ((uint16_t)(r->last_seq - r->base_seq) >= 0x8000)
            r->base_seq = (uint16_t)(r->last_seq - 0x7fff);
    }
}

bool igw_rtp_rewriter_unmap(const igw_rtp_rewriter *r, uint16_t out_seq, uint16_t *in_seq)
{
    if (!r->started)
        return false;
    /* The distances from base_seq are below 2^15 by construction. */
    if ((uint16_t)(out_seq - r->base_seq) > (uint16_t)(r->last_seq - r->base_seq))
        return false;
    *in_seq = (uint16_t)(out_seq - r->seq_delta);
    return true;
}

/* ---- the talk floor ------------------------------------------------------------------------ */

void igw_rtp_floor_init(igw_rtp_floor *f, uint32_t clock, uint16_t first_seq, uint32_t first_ts, uint64_t hold_us)
{
    memset(f, 0, sizeof *f);
    igw_rtp_rewriter_init(&f->rw, clock, first_seq, first_ts);
    f->hold_us = hold_us;
}

igw_floor_rc igw_rtp_floor_map(igw_rtp_floor *f, uintptr_t who, bool active, const igw_rtp_hdr *h, uint64_t now_us,
                               uint16_t *out_seq, uint32_t *out_ts)
{
    if (f->holder && now_us - f->active_us > f->hold_us)
        f->holder = 0; /* silent too long */
    if (f->holder && f->holder != who)
        return IGW_FLOOR_BUSY;
    if (!f->holder) {
        if (!active)
            return IGW_FLOOR_IDLE;
        f->holder = who;
        f->holder_ssrc = h->ssrc;
        igw_rtp_rewriter_rebase(&f->rw);
    } else if (f->holder_ssrc != h->ssrc) { /* the holder restarted its stream */
        f->holder_ssrc = h->ssrc;
        igw_rtp_rewriter_rebase(&f->rw);
    }
    if (active)
        f->active_us = now_us;
    igw_rtp_rewriter_map(&f->rw, h->seq, h->ts, now_us, out_seq, out_ts);
    uint16_t in;
    if (!igw_rtp_rewriter_unmap(&f->rw, *out_seq, &in))
        return IGW_FLOOR_LATE;
    return IGW_FLOOR_FORWARD;
}

void igw_rtp_floor_release(igw_rtp_floor *f, uintptr_t who)
{
    if (f->holder == who)
        f->holder = 0;
}

/* ---- the history ------------------------------------------------------------------------- */

typedef struct slot {
    uint16_t seq;
    uint16_t len; /* 0: empty */
    uint8_t data[IGW_RTP_MTU];
} slot;

struct igw_rtp_history {
    size_t mask;
    slot slots[];
};

igw_rtp_history *igw_rtp_history_new(size_t slots)
{
    if (slots < 16 || slots > 4096 || (slots & (slots - 1)) != 0)
        return NULL;
    igw_rtp_history *h = calloc(1, sizeof *h + slots * sizeof(slot));
    if (!h)
        return NULL;
    h->mask = slots - 1;
    return h;
}

void igw_rtp_history_free(igw_rtp_history *h)
{
    free(h);
}

void igw_rtp_history_put(igw_rtp_history *h, uint16_t seq, const uint8_t *p, size_t n)
{
    if (n == 0 || n > IGW_RTP_MTU)
        return;
    slot *s = &h->slots[seq & h->mask];
    memcpy(s->data, p, n);
    s->seq = seq;
    s->len = (uint16_t)n;
}

const uint8_t *igw_rtp_history_get(const igw_rtp_history *h, uint16_t seq, size_t *n)
{
    const slot *s = &h->slots[seq & h->mask];
    if (s->len == 0 || s->seq != seq)
        return NULL;
    *n = s->len;
    return s->data;
}
