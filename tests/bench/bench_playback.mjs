// bench_playback.mjs - recordPlayback through igwd's public API (issue 17
// §5, the playback phase of make bench-recordings), run by bench_playback.sh
// inside media_netns with igwd and the services up. One application (its
// events pushed over the WebSocket), the demo camera (igw-vcam on the broker,
// recording segments of SEGMENT_MS), headless Chromium viewers.
//
//   playback (PLAY_N): each a fresh session of one of the camera's
//     recordings (in turn): open -> invited -> mediaOffer (sent at once, as
//     bench_live does) -> loaded -> answer -> the page's peer connected ->
//     mediaState connected -> ready; then nothing may have been received
//     (0 frames, 0 packets), play, and the page's getStats polled every 5 ms
//     until the first decoded frame. play_to_frame: from just before the play
//     command is sent to that frame; open_to_frame: from just before the open
//     command is sent to that frame (the whole path). Frames must go on after
//     it; then interaction.end userStopped (ended with that reason) and the
//     page closed.
//   live reference (LIVE_N, one before each playback): the same viewer on a
//     live view of the same camera. live open_to_frame: the open command to
//     the first frame; then mediaState connected -> established, video paused
//     (trackControl; frames must stop) and resumed: resume_to_frame, from just
//     before the resume command to the next decoded frame. Resume is the live
//     view's own "start video on an established session": the command
//     through igwd, the media core's keyframe request to the camera, its
//     encoder's keyframe, the same forwarding and decoder; play differs in
//     going to the camera over MQTT and starting its player on a file.
//
// One warm-up round of each first, not counted (the camera's presence, JIT,
// the first legs). Both clocks are Date.now() on this host (node and the page).
// Any failure throws: exit 1.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, IGW_REC_DIR, WS_NODE_DIR,
// PLAY_N (20), LIVE_N (PLAY_N), SEGMENT_MS (4000), MIN_RECORDINGS (3).
// Prints the figures, then `PLAYBACK key=value ...` that bench_playback.sh reads.
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { launch, newViewer, sleep } from '../media/lib.mjs';
import { DEMO, target, camera, token, app, call, result, accepted, mediaOffer, end, pct } from './api.mjs';

const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
const PLAY_N = Number(process.env.PLAY_N || 20);
const LIVE_N = Number(process.env.LIVE_N || PLAY_N);
const SEGMENT_MS = Number(process.env.SEGMENT_MS || 4000);
const MIN_RECORDINGS = Number(process.env.MIN_RECORDINGS || 3);

/** igw-vcam recording into IGW_REC_DIR; each stderr line kept with the time
 * it arrived (the camera's "play -> playing" line places the control path). */
function startCamera() {
    const child = spawn(process.env.IGW_VCAM, ['--mqtt', `127.0.0.1:${DEMO.mqtt.port}`, '--product', target.productID,
        '--device', target.deviceName, '--secret', DEMO.device.secret, '--camera-id', camera, '--address', ADDR,
        '--record-dir', process.env.IGW_REC_DIR, '--segment-ms', String(SEGMENT_MS), '--retain-s', '600'],
    { stdio: ['ignore', 'ignore', 'pipe'] });
    const lines = [];
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
        lines.push({ at: Date.now(), line });
        if (lines.length > 20000) lines.splice(0, 10000);
    });
    process.on('exit', () => child.kill('SIGKILL'));
    return { child, lines, tail: (n) => lines.slice(-n).map((l) => `  [vcam] ${l.line}`).join('\n') };
}

async function recordings(a, since) {
    const r = await call('/api/v1/im/interaction/recordings/query',
        { endpointId: a.ep, target, cameraId: camera, startTimeMs: since, endTimeMs: Date.now() + 60000, limit: 32 });
    if (r.status !== 200) throw new Error(`recordings/query: ${JSON.stringify(r.body)}`);
    return r.body.data.list;
}

/** interaction.open until accepted (a camera just started is offline until
 * its presence is stored): {sid, tOpen} with tOpen just before the accepted
 * attempt was sent. */
async function open(a, params) {
    let t, r, tOpen;
    for (let i = 0; i < 150; i++) {
        t = token('open');
        tOpen = Date.now();
        r = await a.command({ msgToken: t, method: 'interaction.open', target, params });
        if (!(r.status === 503 && /offline/.test(r.body.data.reason))) break;
        await sleep(100);
    }
    if (r.status !== 200 || r.body.data.accepted !== true) throw new Error(`open: ${r.status} ${JSON.stringify(r.body)}`);
    const res = await result(a, t, 15000);
    if (res.data.state !== 'invited') throw new Error(`open: ${JSON.stringify(res.data)}`);
    return { sid: res.data.sessionId, tOpen, tInvited: res.at };
}

// ---- in the page -------------------------------------------------------------------------------

/** Resolves to Date.now() in the page once the peer connection is connected. */
const connectedAt = (v, ms) => v.page.evaluate((limit) => new Promise((resolve, reject) => {
    const pc = window.__igw.pc;
    if (pc.connectionState === 'connected') return resolve(Date.now());
    const t = setTimeout(() => reject(new Error(`peer ${pc.connectionState} after ${limit} ms`)), limit);
    pc.addEventListener('connectionstatechange', () => {
        if (pc.connectionState === 'connected') (clearTimeout(t), resolve(Date.now()));
        else if (pc.connectionState === 'failed') (clearTimeout(t), reject(new Error('peer failed')));
    });
}), ms);

/** Arms a poller in the page (getStats every 5 ms) for the first decoded video
 * frame beyond `above`; resolves, once armed, to the stats it started from
 * ({frames, videoPackets, audioPackets}). frameAfter(v) then resolves to
 * {at, frames} (at: the page's Date.now(); -1 if none within ms). */
const armFrame = (v, above, ms) => v.page.evaluate(async ([n0, limit]) => {
    const pc = window.__igw.pc;
    const snap = async () => {
        const s = { frames: 0, videoPackets: 0, audioPackets: 0 };
        (await pc.getStats()).forEach((r) => {
            if (r.type !== 'inbound-rtp') return;
            if (r.kind === 'video') (s.frames += r.framesDecoded || 0, s.videoPackets += r.packetsReceived || 0);
            else s.audioPackets += r.packetsReceived || 0;
        });
        return s;
    };
    const s0 = await snap();
    const end = Date.now() + limit;
    window.__frame = (async () => {
        for (;;) {
            const s = await snap();
            if (s.frames > n0) return { at: Date.now(), frames: s.frames };
            if (Date.now() > end) return { at: -1, frames: s.frames };
            await new Promise((r) => setTimeout(r, 5));
        }
    })();
    return s0;
}, [above, ms]);
const frameAfter = (v) => v.page.evaluate(() => window.__frame);

// ---- one live reference, one playback ---------------------------------------------------------

async function liveOnce(a, browser) {
    const v = await newViewer(browser);
    try {
        const offer = await v.offerRecvOnly();
        const { sid, tOpen } = await open(a, { purpose: 'ipcLiveView', cameraId: camera });
        await v.setAnswer(await mediaOffer(a, sid, offer));
        await armFrame(v, 0, 15000);
        const first = await frameAfter(v);
        if (first.at < 0) throw new Error(`live ${sid}: no frame within 15 s`);
        const openToFrame = first.at - tOpen;
        await connectedAt(v, 15000);
        const tm = token('state');
        await accepted(a, { msgToken: tm, method: 'interaction.mediaState', sessionId: sid,
            params: { mediaRevision: 1, state: 'connected' } });
        await result(a, tm, 15000);
        await a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'established',
            15000, `live ${sid} established`);
        const track = async (operation) => {
            const t = token('track');
            await accepted(a, { msgToken: t, method: 'interaction.trackControl', sessionId: sid,
                params: { trackId: 'video-1', operation, mediaRevision: 1 } });
            const r = await result(a, t, 10000);
            if (r.data.state !== (operation === 'pause' ? 'paused' : 'active')) throw new Error(`${operation}: ${JSON.stringify(r.data)}`);
        };
        await track('pause');
        await sleep(300); // what was in flight arrives and is decoded
        const paused = await armFrame(v, Infinity, 0);
        await sleep(400);
        const still = await armFrame(v, Infinity, 0);
        if (still.frames !== paused.frames) throw new Error(`live ${sid}: frames while paused (${paused.frames} -> ${still.frames})`);
        await armFrame(v, still.frames, 5000);
        const tResume = Date.now();
        await track('resume');
        const next = await frameAfter(v);
        if (next.at < 0) throw new Error(`live ${sid}: no frame within 5 s of resume`);
        await end(a, sid, 'userHangup');
        return { openToFrame, resumeToFrame: next.at - tResume };
    } finally {
        await v.close();
    }
}

async function playbackOnce(a, browser, cam, rec) {
    const v = await newViewer(browser);
    try {
        const offer = await v.offerRecvOnly();
        const { sid, tOpen, tInvited } = await open(a, { purpose: 'recordPlayback', cameraId: camera, recordingId: rec.recordingId });
        const pb = (what) => a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.playback === what,
            15000, `${what} of ${sid}`);
        const loadedP = pb('loaded');
        loadedP.catch(() => {});
        const answer = await mediaOffer(a, sid, offer);
        const tAnswer = Date.now();
        const loaded = await loadedP;
        if (loaded.event.data.state !== 'invited' || loaded.event.data.positionMs !== 0)
            throw new Error(`${sid}: loaded ${JSON.stringify(loaded.event)}`);
        await v.setAnswer(answer);
        const tConnected = await connectedAt(v, 15000);
        await accepted(a, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: sid,
            params: { mediaRevision: 1, state: 'connected' } });
        const ready = await pb('ready');
        if (ready.event.data.state !== 'established' || ready.event.eventSeq <= loaded.event.eventSeq)
            throw new Error(`${sid}: ready ${JSON.stringify(ready.event)} after loaded ${JSON.stringify(loaded.event)}`);
        // Nothing before play: not a frame, not a packet, once ready.
        const s0 = await armFrame(v, 0, 5000);
        if (s0.frames !== 0 || s0.videoPackets !== 0 || s0.audioPackets !== 0)
            throw new Error(`${sid}: received before play: ${JSON.stringify(s0)}`);
        const tp = token('pb');
        const tPlay = Date.now();
        const tAccepted = await accepted(a, { msgToken: tp, method: 'interaction.playbackControl', sessionId: sid,
            params: { operation: 'play', mediaRevision: 1 } });
        const first = await frameAfter(v);
        if (first.at < 0) throw new Error(`${sid}: no frame within 5 s of play`);
        const res = await result(a, tp, 10000);
        if (res.data.state !== 'playing') throw new Error(`${sid}: play: ${JSON.stringify(res.data)}`);
        const camLine = cam.lines.find((l) => l.at >= tPlay && / play -> playing /.test(l.line));
        // Frames go on after the first: the recording plays.
        await armFrame(v, first.frames + 4, 3000);
        const more = await frameAfter(v);
        if (more.at < 0) throw new Error(`${sid}: ${more.frames} frames 3 s after play`);
        await end(a, sid, 'userStopped');
        return {
            playToFrame: first.at - tPlay, openToFrame: first.at - tOpen,
            phases: { invited: tInvited - tOpen, answer: tAnswer - tInvited, connected: tConnected - tAnswer,
                ready: ready.at - tConnected, play: tPlay - ready.at, accepted: tAccepted - tPlay,
                camera: camLine ? camLine.at - tPlay : NaN, frame: first.at - tPlay, result: res.at - tPlay },
        };
    } finally {
        await v.close();
    }
}

const fmt = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return { p50: pct(s, 50), p90: pct(s, 90), max: s[s.length - 1], min: s[0], line: `p50 ${pct(s, 50)} ms, p90 ${pct(s, 90)} ms, min ${s[0]}, max ${s[s.length - 1]}` };
};
const mean = (xs) => {
    const ok = xs.filter((x) => !Number.isNaN(x));
    return ok.length ? (ok.reduce((n, x) => n + x, 0) / ok.length).toFixed(0) : '-';
};

async function main() {
    const cam = startCamera();
    const a = await app();
    const browser = await launch();
    try {
        const t0 = Date.now();
        let list = [];
        while (list.length < MIN_RECORDINGS) {
            if (Date.now() - t0 > MIN_RECORDINGS * SEGMENT_MS + 30000)
                throw new Error(`${list.length} recordings after ${Date.now() - t0} ms\n${cam.tail(30)}`);
            await sleep(250);
            list = await recordings(a, t0 - 60000);
        }
        console.log(`the camera recorded ${list.length} segments of ${SEGMENT_MS} ms in ${Date.now() - t0} ms` +
            ` (durations ${list.map((r) => r.durationMs).join(', ')} ms)`);
        await liveOnce(a, browser); // warm-up, not counted
        await playbackOnce(a, browser, cam, list[0]);
        const live = [], plays = [], played = new Set();
        for (let i = 0; i < Math.max(PLAY_N, LIVE_N); i++) {
            if (i < LIVE_N) live.push(await liveOnce(a, browser));
            if (i < PLAY_N) {
                list = await recordings(a, t0 - 60000); // newer segments join the turn
                const rec = list[i % list.length];
                played.add(rec.recordingId);
                plays.push(await playbackOnce(a, browser, cam, rec));
            }
        }
        const ptf = fmt(plays.map((p) => p.playToFrame)), otf = fmt(plays.map((p) => p.openToFrame));
        const lo = fmt(live.map((l) => l.openToFrame)), lr = fmt(live.map((l) => l.resumeToFrame));
        console.log(`playback, ${PLAY_N} sessions of ${played.size} recordings:`);
        console.log(`  play_to_frame  ${ptf.line}`);
        console.log(`  open_to_frame  ${otf.line}`);
        const ph = (k) => mean(plays.map((p) => p.phases[k]));
        console.log(`  open phases (means, adding up to the mean open_to_frame, ${mean(plays.map((p) => p.openToFrame))} ms): open -> invited ${ph('invited')} ms, invited -> answer ${ph('answer')} ms` +
            ` (mediaOffer sent at invited; loaded in between), answer -> peer connected ${ph('connected')} ms,` +
            ` connected -> ready ${ph('ready')} ms, ready -> play sent ${ph('play')} ms (the check that nothing came)`);
        console.log(`  play phases (means, from play sent): HTTP accepted ${ph('accepted')} ms, the camera's` +
            ` "play -> playing" line ${ph('camera')} ms, first frame ${ph('frame')} ms, the result event ${ph('result')} ms`);
        console.log(`live reference, ${LIVE_N} live views of the same camera (same viewer):`);
        console.log(`  resume_to_frame  ${lr.line}`);
        console.log(`  open_to_frame    ${lo.line}`);
        console.log(`PLAYBACK play_to_frame_p50_ms=${ptf.p50} play_to_frame_p90_ms=${ptf.p90} play_to_frame_max_ms=${ptf.max}` +
            ` open_to_frame_p50_ms=${otf.p50} open_to_frame_p90_ms=${otf.p90} open_to_frame_max_ms=${otf.max}` +
            ` live_resume_to_frame_p50_ms=${lr.p50} live_open_to_frame_p50_ms=${lo.p50}`);
    } finally {
        await browser.close();
        await a.close();
        cam.child.kill('SIGTERM');
    }
}

main().then(() => process.exit(0), (e) => {
    console.error(`bench_playback: ${e.stack || e}`);
    process.exit(1);
});
