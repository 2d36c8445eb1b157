// bench_doorbell.mjs - the door-bell through igwd's public API (issue 25),
// run by bench_doorbell.sh inside media_netns with igwd and the services up.
// ENDPOINTS applications of the camera's owner, each one endpoint whose
// events are pushed over its WebSocket; the demo camera (igw-vcam, a real
// MQTT device):
//
//   part 1, ring to invite: RINGS rings over the device's HTTP send route;
//     from the ring request to the ringing event pushed at the last of the
//     ENDPOINTS endpoints. The reference in the same run: a plain uplink
//     (thing property report) over the same route, request to reply, as
//     many times. Each ring is then answered by one endpoint and hung up.
//   part 2, accept to frame: ACCEPTS rings answered by one endpoint with a
//     Chromium peer whose two-way offer (video recvonly, audio sendrecv with
//     a tone) was made before; from the accept's HTTP acceptance to the
//     first decoded frame. The reference in the same run: OPENS live views
//     (cold camera leg) from the open's acceptance to the first frame.
//   part 3, the race: RACES rings, each accepted by three endpoints at once
//     (igwd's HTTP workers); double_winners counts rings with two 200 results.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, WS_NODE_DIR, ENDPOINTS
// (10), RINGS (50), ACCEPTS (20), OPENS (10), RACES (200).
// Prints `DOORBELL key=value ...` lines that bench_doorbell.sh reads.
import { launch, newViewer, sleep, spawnLines, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, target, camera, token, app, result, accepted, mediaOffer, end, pct, firstFrameAt } from './api.mjs';

const BASE = process.env.IGW_BASE;
const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
const ENDPOINTS = Number(process.env.ENDPOINTS || 10);
const RINGS = Number(process.env.RINGS || 50);
const ACCEPTS = Number(process.env.ACCEPTS || 20);
const OPENS = Number(process.env.OPENS || 10);
const RACES = Number(process.env.RACES || 200);

const send = (type, body) => fetch(`${BASE}/api/v1/things/device/edge/send/${type}`, {
    method: 'POST', headers: { authorization: DEMO.device.authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body) }).then((x) => x.json());
const ringing = (e) => e.method === 'interaction.state' && e.data.state === 'ringing';

/** A ring: its session id (the ring's) once the device's reply came. */
async function ring() {
    const r = await send('media/doorbell', { method: 'ring', msgToken: token('ring'), params: { cameraId: camera } });
    const id = r.data && r.data.data && r.data.data.sessionId;
    if (r.code !== 200 || !id) throw new Error(`ring: ${JSON.stringify(r)}`);
    return id;
}

/** The endpoint's ringing event of the ring rung after `since`. */
const rang = (a, ms = 15000) => a.wait(ringing, ms, 'ringing');

/** Accepts the ringing event ev on a; resolves to {t0: the acceptance, won}. */
async function accept(a, ev) {
    const t = token('accept');
    const t0 = await accepted(a, { msgToken: t, method: 'interaction.control', sessionId: ev.sessionId,
        params: { operation: 'accept', args: { inviteToken: ev.data.inviteToken } } });
    const { event } = await a.wait((e) => e.method === 'interaction.result' && e.msgToken === t, 15000, `result of ${t}`);
    return { t0, won: event.code === 200 };
}

/** The others' sessions of a ring end (answeredElsewhere): their events are
 * consumed so that no endpoint has a stale one for the next ring. */
async function drained(apps, sids) {
    await Promise.all(apps.map((a, i) => sids[i] && a.wait((e) => e.method === 'interaction.state' && e.sessionId === sids[i] &&
        e.data.state === 'ended', 15000, 'ended').catch(() => null)));
}

async function main() {
    const cam = spawnLines(process.env.IGW_VCAM, ['--mqtt', `127.0.0.1:${DEMO.mqtt.port}`, '--product', target.productID,
        '--device', target.deviceName, '--secret', DEMO.device.secret, '--camera-id', camera, '--address', ADDR],
    { prefix: '[vcam] ', quiet: true });
    for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
    const apps = [];
    for (let i = 0; i < ENDPOINTS; i++) apps.push(await app());

    // ---- part 1: ring to invite --------------------------------------------------------------------
    const ringMs = [], upMs = [];
    for (let n = -1; n < RINGS; n++) { // one ring first, not counted
        const t0 = Date.now();
        await ring();
        const evs = await Promise.all(apps.map((a) => rang(a)));
        if (n >= 0) ringMs.push(Math.max(...evs.map((e) => e.at)) - t0);
        const w = await accept(apps[0], evs[0].event);
        if (!w.won) throw new Error('part 1: the only accept lost');
        await drained(apps.slice(1), evs.slice(1).map((e) => e.event.sessionId));
        await end(apps[0], evs[0].event.sessionId, 'userHangup');
        const u0 = Date.now();
        const r = await send('thing/property', { method: 'report', msgToken: token('up'), params: { brightness: 40 } });
        if (r.code !== 200) throw new Error(`uplink: ${JSON.stringify(r)}`);
        if (n >= 0) upMs.push(Date.now() - u0);
    }
    ringMs.sort((x, y) => x - y);
    upMs.sort((x, y) => x - y);
    console.log(`ring to invite at ${ENDPOINTS} endpoints, ${RINGS} rings: p50 ${pct(ringMs, 50)} ms, p99 ${pct(ringMs, 99)} ms;` +
        ` a plain uplink: p50 ${pct(upMs, 50)} ms, p99 ${pct(upMs, 99)} ms`);

    // ---- part 2: accept to frame, beside a live view's open to frame --------------------------------
    const browser = await launch({ args: AUTOPLAY_ARGS });
    const accMs = [], openMs = [];
    for (let n = -1; n < ACCEPTS; n++) {
        const v = await newViewer(browser);
        const offer = await v.offerPublish(440);
        await ring();
        const evs = await Promise.all(apps.map((a) => rang(a)));
        await sleep(300); // the camera's leg is up by the time a person answers
        const w = await accept(apps[0], evs[0].event);
        if (!w.won) throw new Error('part 2: the only accept lost');
        const sid = evs[0].event.sessionId;
        await v.setAnswer(await mediaOffer(apps[0], sid, offer));
        const at = await firstFrameAt(v, 15000);
        if (at < 0) throw new Error(`accept ${n}: no frame decoded within 15 s`);
        if (n >= 0) accMs.push(at - w.t0);
        await drained(apps.slice(1), evs.slice(1).map((e) => e.event.sessionId));
        await end(apps[0], sid, 'userHangup');
        await v.close();
    }
    for (let n = -1; n < OPENS; n++) {
        const v = await newViewer(browser);
        const offer = await v.offerRecvOnly();
        const t = token('open');
        const t0 = await accepted(apps[0], { msgToken: t, method: 'interaction.open', target,
            params: { purpose: 'ipcLiveView', cameraId: camera } });
        const { data } = await result(apps[0], t, 15000);
        await v.setAnswer(await mediaOffer(apps[0], data.sessionId, offer));
        const at = await firstFrameAt(v, 15000);
        if (at < 0) throw new Error(`open ${n}: no frame decoded within 15 s`);
        if (n >= 0) openMs.push(at - t0);
        await end(apps[0], data.sessionId, 'userHangup');
        await v.close();
    }
    await browser.close();
    accMs.sort((x, y) => x - y);
    openMs.sort((x, y) => x - y);
    console.log(`accept to frame, ${ACCEPTS} accepts: p50 ${pct(accMs, 50)} ms, p99 ${pct(accMs, 99)} ms;` +
        ` a live view's open to frame (cold leg), ${OPENS} opens: p50 ${pct(openMs, 50)} ms, p99 ${pct(openMs, 99)} ms`);

    // ---- part 3: the race ------------------------------------------------------------------------------
    let doubles = 0, none = 0;
    const racers = apps.slice(0, 3);
    for (let n = 0; n < RACES; n++) {
        await ring();
        const evs = await Promise.all(apps.map((a) => rang(a)));
        const res = await Promise.all(racers.map(async (a, i) => {
            const t = token('race');
            const r = await a.command({ msgToken: t, method: 'interaction.control', sessionId: evs[i].event.sessionId,
                params: { operation: 'accept', args: { inviteToken: evs[i].event.data.inviteToken } } });
            if (r.status !== 200) return false; /* refused at once: its session ended (answered elsewhere) */
            const { event } = await a.wait((e) => e.method === 'interaction.result' && e.msgToken === t, 15000, 'race result');
            return event.code === 200;
        }));
        const won = res.filter(Boolean).length;
        if (won > 1) doubles++;
        if (won === 0) none++;
        const wi = res.indexOf(true);
        await drained(apps.filter((_, i) => i !== wi), evs.filter((_, i) => i !== wi).map((e) => e.event.sessionId));
        if (wi >= 0) await end(apps[wi], evs[wi].event.sessionId, 'userHangup');
    }
    console.log(`races: ${RACES} rings, 3 accepts each: ${doubles} with two winners, ${none} with none`);
    console.log(`DOORBELL ring_to_invite_p50_ms=${pct(ringMs, 50)} ring_to_invite_p99_ms=${pct(ringMs, 99)}` +
        ` uplink_p99_ms=${pct(upMs, 99)} accept_to_frame_p50_ms=${pct(accMs, 50)} accept_to_frame_p99_ms=${pct(accMs, 99)}` +
        ` open_to_frame_p50_ms=${pct(openMs, 50)} races=${RACES} double_winners=${doubles} no_winner=${none}`);
    for (const a of apps) await a.close();
    cam.kill('SIGTERM');
    await sleep(300);
    process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
