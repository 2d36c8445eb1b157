// live_lib.mjs - what the live-view tests (live_test.mjs, live_gst.mjs)
// share: the demo tenant, the public API as an application uses it (an
// endpoint, commands, events pulled and acknowledged), and the camera
// (igw-vcam as the demo device on the broker).
//
// env: IGW_BASE (igwd's URL), IGW_VCAM (the camera binary), IGW_DEMO (the
// demo tenant's JSON), IGW_NETNS_ADDR (the address every peer uses).
import { readFileSync, existsSync } from 'node:fs';
import { newViewer, sleep, spawnLines } from '../media/lib.mjs';

const BASE = process.env.IGW_BASE;
export const DEMO = JSON.parse(readFileSync(process.env.IGW_DEMO, 'utf8'));
export const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
export const target = { productID: DEMO.device.productID, deviceName: DEMO.device.deviceName };
export const camera = DEMO.camera.cameraId;

export async function call(user, path, body, base = BASE) {
    const r = await fetch(base + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
}

/** A message of the demo device over the HTTP send route (its own
 * credentials) of the node at `base`, as it would publish it on MQTT:
 * {status, body} (body: the device's reply). */
export async function deviceSend(handleType, message, base = BASE) {
    const r = await fetch(`${base}/api/v1/things/device/edge/send/${handleType}`, {
        method: 'POST',
        headers: { authorization: DEMO.device.authorization, 'content-type': 'application/json' },
        body: JSON.stringify(message),
    });
    return { status: r.status, body: await r.json() };
}

/** An application of `user`: its endpoint, its commands, its events
 * (pulled and acknowledged into a.events); wait/result/state find an event,
 * pulling until ms. */
export async function app(user) {
    const r = await call(user, '/api/v1/im/interaction/endpoints/register');
    if (r.status !== 200) throw new Error(`register: ${JSON.stringify(r.body)}`);
    // a.base: the node its commands go to (IGW_BASE; another node's URL
    // behind a balancer).
    const a = { user, ep: r.body.data.endpointId, events: [], base: BASE };
    a.command = (command) => call(user, '/api/v1/im/interaction/commands', { endpointId: a.ep, command }, a.base);
    a.pull = async () => {
        const p = await call(user, '/api/v1/im/interaction/events', { endpointId: a.ep, limit: 32 });
        if (p.status !== 200) throw new Error(`events: ${JSON.stringify(p.body)}`);
        const list = p.body.data.list;
        if (list.length) {
            a.events.push(...list.map((i) => i.event));
            await call(user, '/api/v1/im/interaction/events/ack',
                { endpointId: a.ep, deliveryIds: list.map((i) => i.deliveryId) });
        }
    };
    // The first event (since `from`) that pred accepts, pulling until ms.
    a.wait = async (pred, ms, from = 0) => {
        const deadline = Date.now() + ms;
        for (;;) {
            const e = a.events.slice(from).find(pred);
            if (e) return e;
            if (Date.now() > deadline) return null;
            await a.pull();
            await sleep(100);
        }
    };
    a.result = (msgToken, ms = 10000) =>
        a.wait((e) => e.method === 'interaction.result' && e.msgToken === msgToken, ms);
    a.state = (sid, state, ms = 15000) =>
        a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === state, ms);
    return a;
}

/** Opens a session for application a with a Chromium viewer (browser,
 * media/lib.mjs's launch), checked by checker c ({check(ok, what)}),
 * msgTokens from token(prefix): opts.purpose (ipcLiveView) with opts.params
 * besides the camera, the viewer's page opts.url (a secure page for the
 * microphone), its offer opts.offer(v) (recvonly audio and video). Returns
 * the session, with its open and mediaOffer commands (for replays), the
 * offer and the answer applied. */
export async function openSession(c, a, browser, name, token, opts = {}) {
    const t = token('open');
    const cmd = { msgToken: t, method: 'interaction.open', target,
        params: { purpose: opts.purpose || 'ipcLiveView', cameraId: camera, ...opts.params } };
    // The first open waits for the camera: offline (503) until the broker's
    // presence fact of its connection is stored.
    let r;
    for (let i = 0; i < 150; i++) {
        r = await a.command(cmd);
        if (!(r.status === 503 && r.body.data.reason === 'the camera is offline')) break;
        await sleep(100);
    }
    c.check(r.status === 200 && r.body.data.accepted === true, `${name}: open accepted (${JSON.stringify(r.body)})`);
    const res = await a.result(t);
    c.check(res && res.code === 200 && res.data.state === 'invited' && res.data.sessionId && res.sessionId === res.data.sessionId,
        `${name}: interaction.result invited with the sessionId (${JSON.stringify(res)})`);
    const sid = res && res.data.sessionId;
    const v = await newViewer(browser, opts.url ? { url: opts.url } : {});
    const offer = await (opts.offer ? opts.offer(v) : v.offerRecvOnly());
    const to = token('offer');
    const offerCmd = { msgToken: to, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } };
    await accepted(c, a, offerCmd, `${name}: mediaOffer`);
    const ans = await a.result(to, 15000);
    c.check(ans && ans.code === 200 && ans.data.webrtc && typeof ans.data.webrtc.sdp === 'string' && ans.data.mediaRevision === 1,
        `${name}: the mediaOffer result carries the answer (${JSON.stringify(ans && ans.data && { ...ans.data, webrtc: !!ans.data.webrtc })})`);
    await v.setAnswer(ans.data.webrtc.sdp).catch((e) => {
        throw new Error(`${name}: the answer was refused: ${e.message}\n--- offer\n${offer}\n--- answer\n${ans.data.webrtc.sdp}`);
    });
    return { a, sid, v, name, openCmd: cmd, offerCmd, offer, answer: ans.data.webrtc.sdp };
}

/** A live view (openSession's defaults). */
export const openLiveView = (c, a, browser, name, token) => openSession(c, a, browser, name, token);

/** What igw-vcam's speaker played (its --speaker-log file) since `since`
 * (Unix ms): [{at_ms, rms_db, peak_db}]; [] before the file exists. */
export function speakerLevels(file, since) {
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((x) => x.at_ms >= since);
}

/** `a` sends `command`; checker c checks it was accepted. */
export async function accepted(c, a, command, what) {
    const r = await a.command(command);
    c.check(r.status === 200 && r.body.data && r.body.data.accepted === true, `${what}: accepted (${JSON.stringify(r.body)})`);
    return r;
}

/** The demo camera: igw-vcam on the broker with the demo device's credentials
 * (and `extra` arguments: --speaker-log FILE...). */
export function startCamera(vcam, prefix, extra = []) {
    return spawnLines(vcam, ['--mqtt', `127.0.0.1:${DEMO.mqtt.port}`, '--product', target.productID,
        '--device', target.deviceName, '--secret', DEMO.device.secret, '--camera-id', camera, '--address', ADDR,
        ...extra],
    { prefix });
}
