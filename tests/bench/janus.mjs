// janus.mjs - a minimal client of the Janus HTTP API (REST + long poll) for
// the media benchmark: one session holding one streaming-plugin handle per
// viewer. Node 20 (global fetch), no dependencies.
//
//   import { Janus } from './janus.mjs';
//   const j = new Janus('http://127.0.0.1:8088/janus');
//   await j.session();
//   const { handle, offerSdp } = await j.watch(1);   // attaches a new handle
//   await j.start(handle, answerSdp);
//   await j.waitEvent(handle, (e) => e.janus === 'webrtcup', 10000);
//   await j.destroy();
//
// Janus answers a plugin "message" with an "ack" on the POST; the plugin's
// reply (here the JSEP offer) arrives later as an event carrying the same
// transaction, on the session's long poll (GET /janus/<session>?maxev=N).
// One long poll per session serves every handle: events are routed by
// transaction to the request that waits for them, the rest (webrtcup,
// media, hangup, slowlink, trickle, detached) by sender, i.e. handle id.
//
// Candidates: Janus as configured by tests/bench/janus/start.sh runs
// half-trickle, so it gathers before it answers "watch" and the offer holds
// every candidate (a=candidate lines in each m-section, then
// a=end-of-candidates); no trickle event comes. Trickle events are still
// collected, should a Janus run with full_trickle: candidates(handle) merges
// both. Janus needs no trickle from us when the answer holds the candidates.
import { randomBytes } from 'node:crypto';

/** An error reported by Janus (core "error" or plugin error_code/error). */
export class JanusError extends Error {
    constructor(code, reason, request) {
        super(`janus${request ? ' ' + request : ''}: ${reason} (${code})`);
        this.name = 'JanusError';
        this.code = code;
        this.reason = reason;
    }
}

const POLL_TIMEOUT_MS = 65000; // Janus closes an idle long poll after 30 s
const KEEPALIVE_MS = 25000;

export class Janus {
    /**
     * base: the API root, e.g. 'http://127.0.0.1:8088/janus'.
     * opts.maxev: events per long poll (default 64); opts.requestTimeoutMs:
     * for one POST (default 10000); opts.eventTimeoutMs: for a plugin reply
     * (default 15000: a watch waits for ICE gathering).
     */
    constructor(base, opts = {}) {
        this.base = String(base).replace(/\/+$/, '');
        this.maxev = opts.maxev || 64;
        this.requestTimeoutMs = opts.requestTimeoutMs || 10000;
        this.eventTimeoutMs = opts.eventTimeoutMs || 15000;
        this.sessionId = null;
        this.pending = new Map(); // transaction -> {resolve, reject, timer, what}
        this.handles = new Map(); // handle id -> {events, trickled, waiters, offerSdp, gone}
        this.pollError = null;
        this.closed = false;
        this.polling = null;
        this.pollAbort = new AbortController();
        this.keepaliveTimer = null;
    }

    // ---- requests ----

    post(path, body, what) {
        return this.postTx(path, body, randomBytes(12).toString('base64url'), what);
    }

    async postTx(path, body, transaction, what) {
        let r;
        try {
            r = await fetch(this.base + path, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ ...body, transaction }),
                signal: AbortSignal.timeout(this.requestTimeoutMs),
            });
        } catch (e) {
            throw new Error(`janus ${what}: POST ${path} failed: ${e.message}`);
        }
        const text = await r.text();
        if (!r.ok) throw new Error(`janus ${what}: HTTP ${r.status}: ${text.slice(0, 200)}`);
        let msg;
        try {
            msg = JSON.parse(text);
        } catch {
            throw new Error(`janus ${what}: not JSON: ${text.slice(0, 200)}`);
        }
        if (msg.janus === 'error') throw new JanusError(msg.error?.code, msg.error?.reason, what);
        if (msg.transaction !== transaction)
            throw new Error(`janus ${what}: reply for transaction ${msg.transaction}, sent ${transaction}`);
        return msg;
    }

    /** Sends a plugin message; resolves to the plugin's event {data, jsep}. */
    async message(handle, body, jsep, what) {
        this.assertOpen();
        const transaction = randomBytes(12).toString('base64url');
        // Registered before the POST: the event may be polled before the ack.
        const reply = new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                this.pending.delete(transaction);
                reject(new Error(`janus ${what}: no reply within ${this.eventTimeoutMs} ms`));
            }, this.eventTimeoutMs);
            this.pending.set(transaction, { resolve, reject, timer, what });
        });
        reply.catch(() => {}); // rejected only after someone awaits it below
        let ack;
        try {
            ack = await this.postTx(`/${this.sessionId}/${handle}`, { janus: 'message', body, ...(jsep ? { jsep } : {}) }, transaction, what);
        } catch (e) {
            this.settle(transaction, null, e);
            throw e;
        }
        if (ack.janus === 'success') {
            // A synchronous plugin reply (not the streaming plugin's watch/start).
            this.settle(transaction, ack);
        } else if (ack.janus !== 'ack') {
            this.settle(transaction, null, new Error(`janus ${what}: unexpected reply ${ack.janus}`));
        }
        const ev = await reply;
        const data = ev.plugindata?.data || {};
        if (data.error_code || data.error) throw new JanusError(data.error_code, data.error, what);
        return { data, jsep: ev.jsep };
    }

    settle(transaction, msg, err) {
        const p = this.pending.get(transaction);
        if (!p) return false;
        this.pending.delete(transaction);
        clearTimeout(p.timer);
        if (err) p.reject(err);
        else p.resolve(msg);
        return true;
    }

    assertOpen() {
        if (this.closed) throw new Error('janus: session destroyed');
        if (this.pollError) throw this.pollError;
        if (this.sessionId === null) throw new Error('janus: no session (call session() first)');
    }

    // ---- the public API ----

    /** Creates the session and starts its long poll; resolves to its id. */
    async session() {
        if (this.sessionId !== null) throw new Error('janus: session already created');
        const r = await this.post('', { janus: 'create' }, 'create');
        this.sessionId = checkId(r.data?.id, 'session id');
        this.polling = this.pollLoop();
        this.keepaliveTimer = setInterval(() => this.keepalive().catch(() => {}), KEEPALIVE_MS);
        this.keepaliveTimer.unref();
        return this.sessionId;
    }

    /** Attaches a new handle to janus.plugin.streaming; resolves to its id. */
    async attachStreaming() {
        this.assertOpen();
        const r = await this.post(`/${this.sessionId}`, { janus: 'attach', plugin: 'janus.plugin.streaming' }, 'attach');
        const id = checkId(r.data?.id, 'handle id');
        this.handles.set(id, { events: [], trickled: [], waiters: new Set(), offerSdp: null, gone: null });
        return id;
    }

    /**
     * Asks to watch a mountpoint on handle (a new one is attached if none is
     * given); resolves to {handle, offerSdp} once Janus sends its offer.
     */
    async watch(mountpointId, handle) {
        if (handle === undefined) handle = await this.attachStreaming();
        const h = this.state(handle);
        const { jsep } = await this.message(handle, { request: 'watch', id: mountpointId }, null, `watch ${mountpointId}`);
        if (!jsep || jsep.type !== 'offer' || typeof jsep.sdp !== 'string')
            throw new Error(`janus watch ${mountpointId}: the event carried no offer`);
        h.offerSdp = jsep.sdp;
        return { handle, offerSdp: jsep.sdp };
    }

    /** Sends the viewer's answer; resolves once the plugin says it starts. */
    async start(handle, answerSdp) {
        this.state(handle);
        const { data } = await this.message(handle, { request: 'start' }, { type: 'answer', sdp: answerSdp }, 'start');
        return data;
    }

    /** Stops the stream on a handle and detaches it (viewer churn). */
    async detach(handle) {
        this.assertOpen();
        this.state(handle);
        await this.post(`/${this.sessionId}/${handle}`, { janus: 'detach' }, 'detach');
        this.failWaiters(handle, new Error(`janus: handle ${handle} detached`));
        this.handles.delete(handle);
    }

    /** Keeps the session alive (also sent every 25 s while it exists). */
    async keepalive() {
        this.assertOpen();
        const r = await this.post(`/${this.sessionId}`, { janus: 'keepalive' }, 'keepalive');
        if (r.janus !== 'ack') throw new Error(`janus keepalive: unexpected reply ${r.janus}`);
    }

    /** Destroys the session (Janus hangs up and detaches every handle). */
    async destroy() {
        if (this.sessionId === null || this.closed) return;
        clearInterval(this.keepaliveTimer);
        let err = null;
        try {
            await this.post(`/${this.sessionId}`, { janus: 'destroy' }, 'destroy');
        } catch (e) {
            err = e;
        }
        this.close(new Error('janus: session destroyed'));
        if (err) throw err;
    }

    /**
     * The ICE candidates Janus gave for handle: the a=candidate lines of its
     * offer (without the "a=" prefix, deduplicated: with BUNDLE every
     * m-section repeats them) followed by trickled ones, if any, as
     * {candidate, sdpMid, sdpMLineIndex} where Janus sent those.
     */
    candidates(handle) {
        const h = this.state(handle);
        const out = [];
        const seen = new Set();
        for (const line of (h.offerSdp || '').split(/\r?\n/)) {
            if (!line.startsWith('a=candidate:')) continue;
            const c = line.slice(2);
            if (seen.has(c)) continue;
            seen.add(c);
            out.push({ candidate: c, sdpMid: null, sdpMLineIndex: null });
        }
        for (const t of h.trickled) {
            if (t.completed || seen.has(t.candidate)) continue;
            seen.add(t.candidate);
            out.push({ candidate: t.candidate, sdpMid: t.sdpMid ?? null, sdpMLineIndex: t.sdpMLineIndex ?? null });
        }
        return out;
    }

    /** Every event received for handle so far (not the transaction replies). */
    events(handle) {
        return this.state(handle).events.slice();
    }

    /**
     * Resolves to the first event of handle (past or future) for which
     * pred(event) holds, e.g. (e) => e.janus === 'webrtcup'; rejects after
     * ms, on hangup/detach when waiting for something else, or on poll errors.
     */
    waitEvent(handle, pred, ms = 10000) {
        const h = this.state(handle);
        const past = h.events.find(pred);
        if (past) return Promise.resolve(past);
        if (h.gone) return Promise.reject(h.gone);
        return new Promise((resolve, reject) => {
            const w = {
                pred,
                resolve: (e) => (clearTimeout(w.timer), h.waiters.delete(w), resolve(e)),
                reject: (e) => (clearTimeout(w.timer), h.waiters.delete(w), reject(e)),
            };
            w.timer = setTimeout(() => w.reject(new Error(`janus: no matching event on handle ${handle} within ${ms} ms`)), ms);
            h.waiters.add(w);
        });
    }

    // ---- the long poll ----

    state(handle) {
        const h = this.handles.get(handle);
        if (!h) throw new Error(`janus: unknown handle ${handle}`);
        return h;
    }

    async pollLoop() {
        while (!this.closed) {
            let msgs;
            try {
                const r = await fetch(`${this.base}/${this.sessionId}?maxev=${this.maxev}&rid=${Date.now()}`, {
                    signal: AbortSignal.any([this.pollAbort.signal, AbortSignal.timeout(POLL_TIMEOUT_MS)]),
                });
                const text = await r.text();
                if (this.closed) return;
                if (!r.ok) throw new Error(`HTTP ${r.status}: ${text.slice(0, 200)}`);
                msgs = JSON.parse(text);
            } catch (e) {
                if (this.closed) return;
                this.close(new Error(`janus: long poll failed: ${e.message}`));
                return;
            }
            for (const m of Array.isArray(msgs) ? msgs : [msgs]) this.dispatch(m);
        }
    }

    dispatch(m) {
        if (!m || typeof m !== 'object') return;
        switch (m.janus) {
        case 'keepalive':
            return;
        case 'error':
            // Errors on the poll itself, e.g. 458 "No such session".
            this.close(new JanusError(m.error?.code, m.error?.reason, 'poll'));
            return;
        case 'timeout':
            this.close(new Error(`janus: session ${this.sessionId} timed out`));
            return;
        default:
            break;
        }
        if (m.transaction && this.settle(m.transaction, m)) return;
        const h = this.handles.get(m.sender);
        if (!h) return; // an event for a handle already detached
        h.events.push(m);
        if (m.janus === 'trickle') {
            const list = Array.isArray(m.candidates) ? m.candidates : [m.candidate];
            for (const c of list) if (c) h.trickled.push(c);
        }
        if (m.janus === 'hangup' || m.janus === 'detached') h.gone = new Error(`janus: handle ${m.sender} ${m.janus}${m.reason ? ': ' + m.reason : ''}`);
        for (const w of [...h.waiters]) {
            if (w.pred(m)) w.resolve(m);
            else if (h.gone) w.reject(h.gone);
        }
    }

    failWaiters(handle, err) {
        const h = this.handles.get(handle);
        if (h) for (const w of [...h.waiters]) w.reject(err);
    }

    close(err) {
        if (this.closed) return;
        this.closed = true;
        this.pollError = err;
        clearInterval(this.keepaliveTimer);
        this.pollAbort.abort(); // else the open long poll holds the process for up to 30 s
        for (const t of [...this.pending.keys()]) this.settle(t, null, err);
        for (const id of this.handles.keys()) this.failWaiters(id, err);
    }
}

// Janus ids are random integers below 2^53 (JavaScript-safe); anything else
// would lose digits in JSON.parse.
function checkId(v, what) {
    if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`janus: bad ${what}: ${v}`);
    return v;
}
