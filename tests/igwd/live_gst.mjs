// live_gst.mjs - IPC live view with a non-browser peer (issue 15): the
// application uses only the public API (register, open ipcLiveView with the
// demo user's token, pull events), and its WebRTC peer is GStreamer's
// webrtcbin (tests/igwd/gst_viewer.c), not Chromium: any standards WebRTC
// stack is served the same. Run by live_test.sh after live_test.mjs, inside
// the same network namespace, with igwd and the services up; live_test.mjs
// killed its camera, so this starts a camera of its own.
//
// The flow: open -> result invited -> the viewer's complete offer in
// interaction.mediaOffer -> the result's data.webrtc.sdp to the viewer ->
// frames decoded at the camera's 640x360 -> the viewer's peer connected ->
// mediaState connected -> interaction.state established (eventSeq 1) ->
// trackControl pause (frames stop) / resume (frames again) -> end ->
// ended userHangup (eventSeq 2), frames stop -> the viewer exits 0 on stdin
// EOF (and on SIGTERM; 1 on an answer it cannot apply), the camera 0 on
// SIGTERM.
//
// env: IGW_BASE (igwd's URL), IGW_VCAM (the camera binary), IGW_GST_VIEWER
// (build/tests/gst_viewer), IGW_DEMO (the demo tenant's JSON), IGW_NETNS_ADDR
// (the address every peer uses).
import { sleep, spawnLines, Checker } from '../media/lib.mjs';
import { DEMO, ADDR, target, camera, app, accepted, startCamera } from './live_lib.mjs';

const VCAM = process.env.IGW_VCAM;
const VIEWER = process.env.IGW_GST_VIEWER;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-gst-${process.pid}-${++seq}`;

/** The GStreamer viewer: every line it prints is read here, so that the
 * latest stats and every state change are at hand. */
function gstViewer() {
    // --audio: audio and video, as a browser offers; the camera's leg has
    // no audio here (no listenAudio), so only video flows.
    const p = spawnLines(VIEWER, ['--audio', '--address', ADDR], { prefix: '[gst] ' });
    const g = { p, stats: { frames: 0, width: 0, height: 0, state: 'new' }, states: [], offer: null };
    let offerWaiter = null;
    (async () => {
        for (;;) {
            let m;
            try {
                m = await p.next(undefined, 3600000);
            } catch {
                return; // exited
            }
            if (m.type === 'stats') g.stats = m;
            else if (m.type === 'state') g.states.push(m.state);
            else if (m.type === 'offer') {
                g.offer = m.sdp;
                if (offerWaiter) offerWaiter();
            }
        }
    })();
    g.nextOffer = (ms) => new Promise((resolve, reject) => {
        if (g.offer) return resolve(g.offer);
        const t = setTimeout(() => reject(new Error(`no offer from the viewer within ${ms} ms`)), ms);
        offerWaiter = () => (clearTimeout(t), resolve(g.offer));
    });
    // Polls the latest stats until pred holds; resolves to them (or to the
    // last ones after ms).
    g.waitFor = async (pred, ms) => {
        const deadline = Date.now() + ms;
        while (!pred(g.stats) && Date.now() < deadline) await sleep(50);
        return g.stats;
    };
    g.waitState = async (state, ms) => {
        const deadline = Date.now() + ms;
        while (!g.states.includes(state) && Date.now() < deadline) await sleep(50);
        return g.states.includes(state);
    };
    return g;
}

async function track(a, sid, operation) {
    const t = token('track');
    await accepted(c, a, { msgToken: t, method: 'interaction.trackControl', sessionId: sid,
        params: { trackId: 'video-1', operation, mediaRevision: 1 } }, `trackControl ${operation}`);
    return a.result(t);
}

async function main() {
    const cam = startCamera(VCAM, '[vcam gst] ');
    const owner = await app(DEMO.user);

    // ---- open: waits for the new camera's presence (the last test's camera was killed) ----
    const to = token('open');
    const open = { msgToken: to, method: 'interaction.open', target, params: { purpose: 'ipcLiveView', cameraId: camera } };
    let r;
    for (let i = 0; i < 150; i++) {
        r = await owner.command(open);
        if (!(r.status === 503 && r.body.data.reason === 'the camera is offline')) break;
        await sleep(100);
    }
    c.check(r.status === 200 && r.body.data.accepted === true, `open accepted (${JSON.stringify(r.body)})`);
    const res = await owner.result(to);
    c.check(res && res.code === 200 && res.data.state === 'invited' && res.data.sessionId && res.sessionId === res.data.sessionId,
        `interaction.result invited with the sessionId (${JSON.stringify(res)})`);
    const sid = res && res.data.sessionId;

    // ---- the GStreamer viewer's offer, the platform's answer -------------------------------
    const g = gstViewer();
    const offer = await g.nextOffer(15000);
    c.check(/^m=video /m.test(offer) && /^a=recvonly\r?$/m.test(offer) && /^a=candidate:.* typ host/m.test(offer) &&
        /^a=rtpmap:\d+ H264\/90000/m.test(offer), 'the viewer offers recvonly H264 with its candidates inside');
    const tm = token('offer');
    await accepted(c, owner, { msgToken: tm, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } }, 'mediaOffer');
    const ans = await owner.result(tm, 15000);
    c.check(ans && ans.code === 200 && ans.data.state === 'answered' && ans.data.mediaRevision === 1 &&
        ans.data.webrtc && typeof ans.data.webrtc.sdp === 'string',
    `the mediaOffer result carries the answer (${JSON.stringify(ans && ans.data && { ...ans.data, webrtc: !!ans.data.webrtc })})`);
    if (!ans || !ans.data.webrtc) throw new Error(`no answer to the viewer's offer\n--- offer\n${offer}`);
    g.p.send({ type: 'answer', sdp: ans.data.webrtc.sdp });

    // ---- media: decoded at the camera's size, the viewer's peer connected --------------------
    let st = await g.waitFor((s) => s.frames > 0 && s.width > 0, 15000);
    c.check(st.frames > 0, `frames decoded by webrtcbin's peer (${JSON.stringify(st)})`);
    c.check(st.width === 640 && st.height === 360, `at the camera's 640x360 (${st.width}x${st.height})`);
    if (!(st.frames > 0))
        console.error(`--- offer\n${offer}\n--- answer\n${ans.data.webrtc.sdp}`);
    c.check(await g.waitState('connected', 5000), `the viewer's peer connection is connected (${g.states.join(' -> ')})`);
    const early = owner.events.find((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'established');
    c.check(!early, 'not established before the application reported connected');
    const ts = token('state');
    await accepted(c, owner, { msgToken: ts, method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } }, 'mediaState connected');
    const sr = await owner.result(ts);
    c.check(sr && sr.code === 200 && sr.data.state === 'connected', `mediaState result (${JSON.stringify(sr)})`);
    const est = await owner.state(sid, 'established');
    c.check(est && est.eventSeq === 1 && est.msgToken === `${sid}.1`, `established with eventSeq 1 (${JSON.stringify(est)})`);

    // ---- pause and resume ----------------------------------------------------------------------
    const p = await track(owner, sid, 'pause');
    c.check(p && p.code === 200 && p.data.state === 'paused' && p.data.trackId === 'video-1' && p.data.mediaRevision === 1,
        `pause result (${JSON.stringify(p)})`);
    await sleep(700);
    const f1 = g.stats.frames;
    await sleep(1500);
    const f2 = g.stats.frames;
    c.check(f2 - f1 <= 2, `frames stop while paused (${f1} -> ${f2})`);
    const q = await track(owner, sid, 'resume');
    c.check(q && q.code === 200 && q.data.state === 'active', `resume result (${JSON.stringify(q)})`);
    st = await g.waitFor((s) => s.frames > f2 + 5, 5000);
    c.check(st.frames > f2 + 5, `frames again after resume (${f2} -> ${st.frames})`);

    // ---- end ------------------------------------------------------------------------------------
    await accepted(c, owner, { msgToken: token('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } }, 'end');
    const ended = await owner.state(sid, 'ended');
    c.check(ended && ended.data.reason === 'userHangup' && ended.eventSeq === 2, `ended userHangup, eventSeq 2 (${JSON.stringify(ended)})`);
    await sleep(700);
    const h1 = g.stats.frames;
    await sleep(1000);
    c.check(g.stats.frames - h1 <= 2, `frames stop after the end (${h1} -> ${g.stats.frames})`);

    // ---- both peers leave cleanly ------------------------------------------------------------------
    g.p.end();
    const ge = await g.p.waitExit(10000).catch((e) => ({ error: e.message }));
    c.check(ge.code === 0, `the viewer exits 0 on stdin EOF (${JSON.stringify(ge)})`);
    // The viewer's own exits: SIGTERM is clean, an answer it cannot apply is not.
    const t = spawnLines(VIEWER, ['--address', ADDR], { prefix: '[gst 2] ' });
    await t.next('offer', 15000);
    t.kill('SIGTERM');
    const te = await t.waitExit(10000).catch((e) => ({ error: e.message }));
    c.check(te.code === 0, `the viewer exits 0 on SIGTERM (${JSON.stringify(te)})`);
    const b = spawnLines(VIEWER, ['--address', ADDR], { prefix: '[gst 3] ' });
    await b.next('offer', 15000);
    b.send({ type: 'answer', sdp: 'v=0\r\n' });
    const be = await b.waitExit(10000).catch((e) => ({ error: e.message }));
    c.check(be.code === 1 && /error: the answer is not an SDP with media/.test(b.stderr()),
        `a bad answer: the viewer exits 1 and says why (${JSON.stringify(be)})`);

    cam.kill('SIGTERM');
    const ce = await cam.waitExit(10000).catch((e) => ({ error: e.message }));
    c.check(ce.code === 0, `the camera exits 0 on SIGTERM (${JSON.stringify(ce)})`);
    c.done('live gst');
}

main().catch((e) => {
    console.error('live gst: FAIL:', e && e.stack ? e.stack : e);
    process.exit(1);
});
