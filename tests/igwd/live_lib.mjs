// live_lib.mjs - what the live-view tests (live_test.mjs, live_gst.mjs)
// share: the demo tenant, the public API as an application uses it (an
// endpoint, commands, events pulled and acknowledged), and the camera
// (igw-vcam as the demo device on the broker).
//
// env: IGW_BASE (igwd's URL), IGW_VCAM (the camera binary), IGW_DEMO (the
// demo tenant's JSON), IGW_NETNS_ADDR (the address every peer uses).
import { readFileSync } from 'node:fs';
import { sleep, spawnLines } from '../media/lib.mjs';

const BASE = process.env.IGW_BASE;
export const DEMO = JSON.parse(readFileSync(process.env.IGW_DEMO, 'utf8'));
export const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
export const target = { productID: DEMO.device.productID, deviceName: DEMO.device.deviceName };
export const camera = DEMO.camera.cameraId;

export async function call(user, path, body) {
    const r = await fetch(BASE + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
}

/** An application of `user`: its endpoint, its commands, its events
 * (pulled and acknowledged into a.events); wait/result/state find an event,
 * pulling until ms. */
export async function app(user) {
    const r = await call(user, '/api/v1/im/interaction/endpoints/register');
    if (r.status !== 200) throw new Error(`register: ${JSON.stringify(r.body)}`);
    const a = { user, ep: r.body.data.endpointId, events: [] };
    a.command = (command) => call(user, '/api/v1/im/interaction/commands', { endpointId: a.ep, command });
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
