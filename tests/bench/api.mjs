// api.mjs - the public API as the media benchmarks' application uses it
// (bench_live.mjs, bench_playback.mjs): one endpoint whose events are pushed
// over its WebSocket (no pull interval in the figures), commands, results,
// and the page-side wait for a viewer's first decoded frame.
//
// env: IGW_BASE (igwd's URL), IGW_DEMO (the demo tenant's JSON), WS_NODE_DIR
// (where the .sh installed the npm package ws).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sleep } from '../media/lib.mjs';

const BASE = process.env.IGW_BASE;
export const DEMO = JSON.parse(readFileSync(process.env.IGW_DEMO, 'utf8'));
const WebSocket = createRequire(process.env.WS_NODE_DIR + '/package.json')('ws');
export const target = { productID: DEMO.device.productID, deviceName: DEMO.device.deviceName };
export const camera = DEMO.camera.cameraId;
let seq = 0;
export const token = (p) => `${p}-${process.pid}-${++seq}`;

export async function call(path, body) {
    const r = await fetch(BASE + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${DEMO.user.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
}

/** The application: one endpoint, events pushed over its WebSocket and
 * acknowledged in batches; wait(pred) resolves to {event, at} (at: Date.now()
 * when it arrived) on the first matching event, events that matched no
 * waiter are kept for a later wait. */
export async function app() {
    const r = await call('/api/v1/im/interaction/endpoints/register');
    if (r.status !== 200) throw new Error(`register: ${JSON.stringify(r.body)}`);
    const ep = r.body.data.endpointId;
    const seen = new Set(), toAck = [], waiters = [], events = [];
    const ws = new WebSocket(`${BASE.replace(/^http/, 'ws')}/api/v1/im/interaction/events/ws/${ep}`,
        { headers: { authorization: `Bearer ${DEMO.user.token}` } });
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    ws.on('message', (data) => {
        const f = JSON.parse(data.toString());
        if (f.method !== 'interaction.event' || seen.has(f.deliveryId)) return;
        seen.add(f.deliveryId);
        toAck.push(f.deliveryId);
        const at = Date.now();
        for (let i = 0; i < waiters.length; i++)
            if (waiters[i].pred(f.event)) {
                waiters.splice(i, 1)[0].resolve({ event: f.event, at });
                return;
            }
        events.push({ event: f.event, at });
    });
    let acking = true;
    const acker = (async () => {
        while (acking || toAck.length) {
            while (toAck.length) {
                const a = await call('/api/v1/im/interaction/events/ack', { endpointId: ep, deliveryIds: toAck.splice(0, 32) });
                if (a.status !== 200) throw new Error(`ack: ${JSON.stringify(a.body)}`);
            }
            await sleep(200);
        }
    })();
    return {
        ep,
        command: (command) => call('/api/v1/im/interaction/commands', { endpointId: ep, command }),
        wait(pred, ms = 15000, what = 'event') {
            const i = events.findIndex((e) => pred(e.event));
            if (i >= 0) return Promise.resolve(events.splice(i, 1)[0]);
            return new Promise((resolve, reject) => {
                const w = { pred, resolve: (e) => (clearTimeout(t), resolve(e)) };
                const t = setTimeout(() => (waiters.splice(waiters.indexOf(w), 1), reject(new Error(`no ${what} within ${ms} ms`))), ms);
                waiters.push(w);
            });
        },
        async close() {
            acking = false;
            await acker;
            ws.close();
        },
    };
}

/** The interaction.result of command t: {data, at}; a code other than 200 throws. */
export const result = (a, t, ms) => a.wait((e) => e.method === 'interaction.result' && e.msgToken === t, ms, `result of ${t}`)
    .then(({ event, at }) => {
        if (event.code !== 200) throw new Error(`${t}: ${JSON.stringify(event)}`);
        return { data: event.data, at };
    });

/** Sends command; throws unless accepted; resolves to Date.now() at the HTTP reply. */
export async function accepted(a, command) {
    const r = await a.command(command);
    if (r.status !== 200 || !r.body.data || r.body.data.accepted !== true)
        throw new Error(`${command.method}: ${r.status} ${JSON.stringify(r.body)}`);
    return Date.now();
}

/** mediaOffer with sdp (revision 1); resolves to the platform's answer. */
export async function mediaOffer(a, sid, sdp) {
    const t = token('offer');
    await accepted(a, { msgToken: t, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp } } });
    const res = await result(a, t, 15000);
    if (!res.data.webrtc || typeof res.data.webrtc.sdp !== 'string') throw new Error(`mediaOffer: ${JSON.stringify(res.data)}`);
    return res.data.webrtc.sdp;
}

/** interaction.end with reason; resolves once the session's ended event
 * carries that reason. */
export async function end(a, sid, reason) {
    await accepted(a, { msgToken: token('end'), method: 'interaction.end', sessionId: sid, params: { reason } });
    const { event } = await a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'ended',
        15000, `end of ${sid}`);
    if (event.data.reason !== reason) throw new Error(`${sid} ended ${JSON.stringify(event.data)}, not ${reason}`);
}

/** The p-th percentile (nearest rank) of an ascending array. */
export const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

/** Resolves, with the page's wall clock (ms), once viewer v's video receiver
 * has decoded a frame; -1 after ms. Polls getStats every 5 ms in the page. */
export function firstFrameAt(v, ms) {
    return v.page.evaluate(async (limit) => {
        const pc = window.__igw.pc, end = Date.now() + limit;
        for (;;) {
            const report = await pc.getStats();
            let n = 0;
            report.forEach((r) => { if (r.type === 'inbound-rtp' && r.kind === 'video') n += r.framesDecoded || 0; });
            if (n > 0) return Date.now();
            if (Date.now() > end) return -1;
            await new Promise((r) => setTimeout(r, 5));
        }
    }, ms);
}
