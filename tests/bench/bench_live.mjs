// bench_live.mjs - live view through igwd's public API (issue 15 §4), run by
// bench_live.sh inside media_netns with igwd and the services up. One
// application (one endpoint, its events pushed over the WebSocket) and the
// demo camera (igw-vcam, a real MQTT device):
//
//   part 1, open to frame: OPENS sequential live views by one Chromium viewer
//     each; from the HTTP 200 `accepted` of interaction.open to the first
//     decoded video frame in the page. Each open finds no viewer on the camera
//     (the previous one ended): the camera leg is invited again every time
//     (cold leg). The page and its recvonly offer are made before the open
//     (an offer does not depend on the session): the interval is igwd, the
//     camera, the network and Chromium's decoder, not page creation. Then
//     WARM_OPENS more while another viewer holds the leg up (warm leg).
//   part 2, rights taken away (issue 24): REVOKES rounds of a live session
//     whose user stops owning the camera (devices.owner_user_id cleared by
//     psql, then restored); from the change's commit to the session's ended
//     event (rightsRevoked) at the application, pushed. The reference in the
//     same run: the same session ended by the application's interaction.end,
//     from its HTTP acceptance to the same event.
//   part 4, renegotiation (issue 26): RENEGOTIATIONS rounds on one Chromium
//     live view: restartIce() and interaction.mediaOffer with mediaRevision
//     + 1; from the offer's HTTP acceptance to the first frame the page
//     decodes after applying the answer. Its reference: part 1's cold open.
//   part 5, muting one's own microphone (issue 26): an ipcTalk session whose
//     Chromium member publishes a tone; MUTES rounds of trackControl stop on
//     its uplink (`speaker`), from just before the stop was sent to its last
//     packet forwarded to the camera (igwd's log line "its uplink stopped
//     ... its last packet forwarded at T", the media core's clock), then
//     publish again.
//   part 3, VIEWERS viewers on the one camera: igw-live-viewers (the media
//     library's peer as the client, full ICE), each its own session opened
//     through the API (open, mediaOffer, mediaState connected); igwd's CPU
//     (/proc/<pid>/stat) over MEASURE_SECONDS divided by the packets the
//     viewers received in that window; loss from their sequence numbers.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, IGWD_PID, LIVE_VIEWERS
// (the client binary), WS_NODE_DIR, IGW_PG_DSN, IGW_IGWD_LOG (igwd's stderr), OPENS (50),
// WARM_OPENS (20, 0 = none), REVOKES (20), RENEGOTIATIONS (20), MUTES (20), VIEWERS (100),
// MEASURE_SECONDS (10).
// Prints `LIVE key=value ...` lines that bench_live.sh reads.
import { execFileSync } from 'node:child_process';
import { launch, newViewer, sleep, spawnLines, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, target, camera, token, app, result, accepted, mediaOffer, end, pct, firstFrameAt, call } from './api.mjs';
import { cpuUs } from './proc.mjs';
import { muteToSilence } from './mute.mjs';

const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
const IGWD_PID = Number(process.env.IGWD_PID);
const OPENS = Number(process.env.OPENS || 50);
const VIEWERS = Number(process.env.VIEWERS || 100);
const MEASURE_S = Number(process.env.MEASURE_SECONDS || 10);
const WARM_OPENS = Number(process.env.WARM_OPENS ?? 20);
const WARMUP_S = Number(process.env.WARMUP_SECONDS || 3); // viewers receiving before the window
const REVOKES = Number(process.env.REVOKES || 20);
const RENEGOTIATIONS = Number(process.env.RENEGOTIATIONS || 20);
const MUTES = Number(process.env.MUTES || 20);
const psql = (sql) => execFileSync('psql', [process.env.IGW_PG_DSN, '-qAtc', sql], { encoding: 'utf8' }).trim();

/** interaction.open until accepted (the camera is offline until its
 * presence is stored); resolves to {sid, t0} with t0 the acceptance. */
async function open(a) {
    const t = token('open');
    const cmd = { msgToken: t, method: 'interaction.open', target, params: { purpose: 'ipcLiveView', cameraId: camera } };
    let r;
    for (let i = 0; i < 150; i++) {
        r = await a.command(cmd);
        if (!(r.status === 503 && r.body.data.reason === 'the camera is offline')) break;
        await sleep(100);
    }
    const t0 = Date.now();
    if (r.status !== 200 || r.body.data.accepted !== true) throw new Error(`open: ${r.status} ${JSON.stringify(r.body)}`);
    const res = await result(a, t, 15000);
    if (res.data.state !== 'invited') throw new Error(`open: ${JSON.stringify(res.data)}`);
    return { sid: res.data.sessionId, t0 };
}

async function openToFrame(a, browser, n, label) {
    // One open first, not counted: the camera's presence, the first leg, JIT.
    const times = [], phases = [];
    for (let i = -1; i < n; i++) {
        const v = await newViewer(browser);
        const offer = await v.offerRecvOnly();
        const { sid, t0 } = await open(a);
        const tInvited = Date.now();
        const answer = await mediaOffer(a, sid, offer);
        const tAnswer = Date.now();
        await v.setAnswer(answer);
        const at = await firstFrameAt(v, 15000);
        if (at < 0) throw new Error(`open ${i}: no frame decoded within 15 s (${JSON.stringify(await v.stats())})`);
        if (i >= 0) {
            times.push(at - t0);
            phases.push({ invited: tInvited - t0, answered: tAnswer - tInvited, frame: at - tAnswer });
        }
        await end(a, sid, 'userHangup');
        await v.close();
    }
    const s = [...times].sort((x, y) => x - y);
    const mean = (k) => phases.reduce((n, p) => n + p[k], 0) / phases.length;
    console.log(`open to frame (${label}), ${n} opens: p50 ${pct(s, 50)} ms,` +
        ` p99 ${pct(s, 99)} ms, min ${s[0]}, max ${s[s.length - 1]}; mean phases: accepted -> invited ${mean('invited').toFixed(0)} ms,` +
        ` invited -> answer ${mean('answered').toFixed(0)} ms, answer -> first frame ${mean('frame').toFixed(0)} ms`);
    return { p50: pct(s, 50), p99: pct(s, 99) };
}

/** The page's wall clock (ms) once viewer v has decoded more than n frames; -1 after ms. */
function frameAfterAt(v, n, ms) {
    return v.page.evaluate(async ([count, limit]) => {
        const end = Date.now() + limit;
        while (Date.now() < end) {
            const st = await window.__igw.stats();
            if (st.framesDecoded > count) return Date.now();
            await new Promise((r) => setTimeout(r, 5));
        }
        return -1;
    }, [n, ms]);
}

/** Part 4: renegotiations of one live view (restartIce, mediaRevision + 1). */
async function renegotiations(a, browser) {
    const v = await newViewer(browser);
    const offer = await v.offerRecvOnly();
    const { sid } = await open(a);
    await v.setAnswer(await mediaOffer(a, sid, offer));
    if (await firstFrameAt(v, 15000) < 0) throw new Error('renegotiation: no first frame');
    const times = [];
    for (let rev = 2; rev <= RENEGOTIATIONS + 1; rev++) {
        const sdp = await v.restartIce();
        const t = token('offer');
        const t0 = await accepted(a, { msgToken: t, method: 'interaction.mediaOffer', sessionId: sid,
            params: { mediaRevision: rev, webrtc: { iceMode: 'full', sdp } } });
        const res = await result(a, t, 15000);
        if (res.data.mediaRevision !== rev) throw new Error(`renegotiation: ${JSON.stringify(res.data)}`);
        await v.setAnswer(res.data.webrtc.sdp);
        const n = (await v.stats()).framesDecoded;
        const at = await frameAfterAt(v, n, 5000);
        if (at < 0) throw new Error(`renegotiation ${rev}: no frame within 5 s of the answer`);
        times.push(at - t0);
        await sleep(200);
    }
    await end(a, sid, 'userHangup');
    await v.close();
    const s = [...times].sort((x, y) => x - y);
    console.log(`renegotiation: ${times.length} rounds (restartIce, mediaRevision + 1), offer accepted to the next decoded frame:` +
        ` p50 ${pct(s, 50)} ms, p99 ${pct(s, 99)} ms, max ${s[s.length - 1]}`);
    console.log(`LIVE renegotiate_to_frame_p50_ms=${pct(s, 50)} renegotiate_to_frame_p99_ms=${pct(s, 99)}`);
}

/** Part 5: an ipcTalk member stops its own uplink (trackControl stop). */
async function mutes(a, browser) {
    let r = await call('/api/v1/im-standin/calls/start', { groupId: DEMO.group.groupId });
    if (r.status !== 200) throw new Error(`calls/start: ${JSON.stringify(r.body)}`);
    const callId = r.body.data.callId;
    const beat = setInterval(() => call('/api/v1/im-standin/calls/heartbeat', { callId }).catch(() => {}), 5000);
    const t = token('open');
    await accepted(a, { msgToken: t, method: 'interaction.open', target, params: { purpose: 'ipcTalk', cameraId: camera, callId } });
    const sid = (await result(a, t, 15000)).data.sessionId;
    const v = await newViewer(browser);
    await v.setAnswer(await mediaOffer(a, sid, await v.offerPublish(440)));
    await v.waitFor((x) => x.audioSent > 50, 15000);
    const control = async (operation) => {
        const tc = token('tc');
        const sent = Date.now();
        await accepted(a, { msgToken: tc, method: 'interaction.trackControl', sessionId: sid,
            params: { trackId: 'speaker', operation, mediaRevision: 1 } });
        await result(a, tc, 10000);
        return sent;
    };
    const out = await muteToSilence({ cycles: MUTES, logPath: process.env.IGW_IGWD_LOG,
        marker: `session ${sid}: its uplink stopped by the application`,
        mute: () => control('stop'), unmute: () => control('publish') });
    clearInterval(beat);
    await end(a, sid, 'userHangup');
    await v.close();
    const s = [...out].sort((x, y) => x - y);
    console.log(`mute: ${out.length} stops of the member's own uplink, stop sent to its last packet at the camera:` +
        ` p50 ${pct(s, 50)} ms, p99 ${pct(s, 99)} ms, max ${s[s.length - 1]}`);
    console.log(`LIVE mute_to_silence_p50_ms=${pct(s, 50)} mute_to_silence_p99_ms=${pct(s, 99)}`);
}

/** One session whose viewer is `id` in the client, up to mediaState connected. */
async function attach(a, client, id) {
    const { sid } = await open(a);
    const offer = await client.call({ op: 'offer', id });
    const answer = await mediaOffer(a, sid, offer.sdp);
    await client.call({ op: 'answer', id, sdp: answer });
    await client.until((ev) => ev.some((e) => e.id === id && (e.event === 'dtls-connected' || e.event === 'failed')), 20000);
    const f = client.events.find((e) => e.id === id && e.event === 'failed');
    if (f) throw new Error(`viewer ${id} failed: ${f.reason}`);
    const t = token('state');
    await accepted(a, { msgToken: t, method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } });
    await result(a, t, 15000);
    return sid;
}

/** igw-live-viewers behind a JSON-lines interface. */
function viewersClient() {
    const p = spawnLines(process.env.LIVE_VIEWERS, ['--address', ADDR], { prefix: '[viewers] ' });
    const events = [], replies = [];
    const pump = async (ms) => {
        const m = await p.next(undefined, ms);
        (m.type === 'event' ? events : replies).push(m);
    };
    return {
        events,
        async call(req, ms = 15000) {
            p.send(req);
            const end = Date.now() + ms;
            while (!replies.length) await pump(Math.max(1, end - Date.now()));
            const r = replies.shift();
            if (!r.ok) throw new Error(`viewers ${req.op} ${req.id || ''}: ${r.error}`);
            return r;
        },
        async until(pred, ms) {
            const end = Date.now() + ms;
            while (!pred(events)) {
                if (Date.now() >= end) throw new Error(`viewers: condition not met within ${ms} ms`);
                await pump(end - Date.now()).catch(() => {});
            }
        },
        end: () => p.end(),
    };
}

/** Part 2: revoke_to_end (the owner loses the camera) against end_to_end
 * (the application hangs up), each from its cause to the pushed ended event. */
async function revokes(a) {
    const dev = `product_id = '${target.productID}' AND device_name = '${target.deviceName}'`;
    const owner = psql(`SELECT owner_user_id FROM devices WHERE ${dev}`);
    const ended = (sid) => a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'ended',
        15000, `end of ${sid}`);
    const rev = [], hang = [];
    for (let i = 0; i < REVOKES; i++) {
        let { sid } = await open(a);
        psql(`UPDATE devices SET owner_user_id = NULL WHERE ${dev}`); // returns after the commit
        const t0 = Date.now();
        const { event, at } = await ended(sid);
        psql(`UPDATE devices SET owner_user_id = ${owner} WHERE ${dev}`);
        if (event.data.reason !== 'rightsRevoked') throw new Error(`${sid} ended ${JSON.stringify(event.data)}`);
        rev.push(at - t0);
        ({ sid } = await open(a));
        const t1 = await accepted(a, { msgToken: token('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } });
        hang.push((await ended(sid)).at - t1);
    }
    rev.sort((x, y) => x - y);
    hang.sort((x, y) => x - y);
    console.log(`rights: ${REVOKES} revocations, commit to ended event p50 ${pct(rev, 50)} ms, p99 ${pct(rev, 99)} ms;` +
        ` reference interaction.end, acceptance to ended event p50 ${pct(hang, 50)} ms, p99 ${pct(hang, 99)} ms`);
    console.log(`LIVE revoke_to_end_p50_ms=${pct(rev, 50)} revoke_to_end_p99_ms=${pct(rev, 99)} hangup_to_end_p99_ms=${pct(hang, 99)}`);
}

async function manyViewers(a, client) {
    const sids = [];
    for (let i = 0; i < VIEWERS; i++) sids.push(await attach(a, client, `v${i}`));
    const ids = sids.map((_, i) => `v${i}`);
    await client.until((ev) => ids.every((id) => ev.some((e) => e.id === id && e.event === 'first-packet')), 30000);
    await sleep(WARMUP_S * 1000);
    const c0 = cpuUs(IGWD_PID), r0 = await client.call({ op: 'totals' }), t0 = Date.now();
    await sleep(MEASURE_S * 1000);
    const c1 = cpuUs(IGWD_PID), r1 = await client.call({ op: 'totals' });
    const secs = (Date.now() - t0) / 1000;
    const pkts = r1.rtp_in - r0.rtp_in, exp = r1.rtp_expected - r0.rtp_expected;
    const failed = client.events.filter((e) => e.event === 'failed' && ids.includes(e.id)).length;
    const loss = exp > 0 ? (100 * Math.max(0, exp - pkts)) / exp : 100;
    const us = (c1 - c0) / Math.max(1, pkts);
    console.log(`igwd: ${VIEWERS} viewers through the API (${r1.receiving} receiving, ${failed} failed),` +
        ` ${(pkts / secs).toFixed(0)} pkt/s delivered, CPU ${((c1 - c0) / 1e4 / secs).toFixed(1)}%,` +
        ` ${us.toFixed(2)} us/pkt (${((r1.bytes_in - r0.bytes_in) / Math.max(1, pkts)).toFixed(0)} B/pkt), loss ${loss.toFixed(3)}%`);
    console.log(`LIVE viewers=${r1.receiving} loss_pct=${loss.toFixed(3)} cpu_us_per_pkt=${us.toFixed(2)}`);
    for (const sid of sids) await end(a, sid, 'userHangup');
}

async function main() {
    const cam = spawnLines(process.env.IGW_VCAM, ['--mqtt', `127.0.0.1:${DEMO.mqtt.port}`, '--product', target.productID,
        '--device', target.deviceName, '--secret', DEMO.device.secret, '--camera-id', camera, '--address', ADDR],
    { prefix: '[vcam] ', quiet: true });
    const a = await app();
    const client = viewersClient();
    const browser = await launch();
    try {
        const cold = await openToFrame(a, browser, OPENS, 'cold leg: the camera is invited at every open');
        let warm = { p50: -1, p99: -1 };
        if (WARM_OPENS > 0) {
            // Warm: another viewer holds the camera's leg up, each open joins it.
            const hold = await attach(a, client, 'hold');
            warm = await openToFrame(a, browser, WARM_OPENS, 'warm leg: another viewer keeps the camera up');
            await end(a, hold, 'userHangup');
            await client.call({ op: 'close', id: 'hold' });
        }
        console.log(`LIVE open_to_frame_p50_ms=${cold.p50} open_to_frame_p99_ms=${cold.p99}` +
            ` warm_open_to_frame_p50_ms=${warm.p50} warm_open_to_frame_p99_ms=${warm.p99}`);
        await renegotiations(a, browser);
    } finally {
        await browser.close();
    }
    const talker = await launch({ args: AUTOPLAY_ARGS });
    try {
        await mutes(a, talker);
    } finally {
        await talker.close();
    }
    await revokes(a);
    try {
        await manyViewers(a, client);
    } finally {
        client.end();
    }
    await a.close();
    cam.kill('SIGTERM');
    await cam.waitExit(5000).catch(() => cam.kill('SIGKILL'));
}

main().then(() => process.exit(0), (e) => {
    console.error(`bench_live: ${e.stack || e}`);
    process.exit(1);
});
