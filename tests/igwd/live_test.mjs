// live_test.mjs - IPC live view end to end through the public API (issue
// 15): igw-vcam is the camera, a real MQTT device on the broker; igwd's
// session engine invites it and answers its offer with the media core;
// headless Chromium pages are the applications' peers. Run by
// live_test.sh inside a network namespace, with igwd and the services up.
//
// env: IGW_BASE (igwd's URL), IGW_VCAM (the camera binary), IGW_DEMO (the
// demo tenant's JSON), IGW_NETNS_ADDR (the address every peer uses).
import { launch, newViewer, sleep, Checker } from '../media/lib.mjs';
import { DEMO, target, camera, app, accepted, startCamera, openLiveView } from './live_lib.mjs';

const VCAM = process.env.IGW_VCAM;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const openView = (a, browser, name) => openLiveView(c, a, browser, name, token);

async function report(s, state) {
    const t = token('state');
    await accepted(c, s.a, { msgToken: t, method: 'interaction.mediaState', sessionId: s.sid, params: { mediaRevision: 1, state } },
        `${s.name}: mediaState ${state}`);
    const r = await s.a.result(t);
    c.check(r && r.code === 200 && r.data.state === state, `${s.name}: mediaState result (${JSON.stringify(r)})`);
}

async function track(s, operation, mediaRevision = 1) {
    const t = token('track');
    await accepted(c, s.a, { msgToken: t, method: 'interaction.trackControl', sessionId: s.sid,
        params: { trackId: 'video-1', operation, mediaRevision } }, `${s.name}: trackControl ${operation}`);
    const r = await s.a.result(t);
    return r;
}

const frames = async (s) => (await s.v.stats()).framesDecoded;

async function main() {
    // The camera: a device on the broker, with its own credentials.
    const cam = startCamera(VCAM, '[vcam] ');
    const owner = await app(DEMO.user);
    const browser = await launch();

    // ---- refusals before anything is claimed -------------------------------------------
    let r = await owner.command({ msgToken: token('x'), method: 'interaction.open', target, params: { purpose: 'ipcLiveView', cameraId: 'nosuch' } });
    c.check(r.status === 404 && r.body.data.path === '/command/params/cameraId', `unknown camera: 404 (${JSON.stringify(r.body)})`);
    const stranger = await app(DEMO.otherEnterpriseUser);
    r = await stranger.command({ msgToken: token('x'), method: 'interaction.open', target, params: { purpose: 'ipcLiveView', cameraId: camera } });
    c.check(r.status === 403 && r.body.data.path === '/command/target', `another enterprise's camera: 403 (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.mediaState', sessionId: 'nosuchsession',
        params: { mediaRevision: 1, state: 'connected' } });
    c.check(r.status === 404 && r.body.data.path === '/command/sessionId', `unknown session: 404 (${JSON.stringify(r.body)})`);

    // ---- the owner's live view ------------------------------------------------------------
    const s1 = await openView(owner, browser, 'viewer 1');
    let st = await s1.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `viewer 1: frames decoded (${JSON.stringify(st)})`);
    const early = owner.events.find((e) => e.method === 'interaction.state' && e.sessionId === s1.sid && e.data.state === 'established');
    c.check(!early, 'viewer 1: not established before the application reported connected');
    await report(s1, 'connected');
    const est = await owner.state(s1.sid, 'established');
    c.check(est && est.eventSeq === 1 && est.msgToken === `${s1.sid}.1`, `viewer 1: established with eventSeq 1 (${JSON.stringify(est)})`);

    // ---- a second viewer, another user with a grant: the camera sends once ----------------
    const second = await app(DEMO.otherUser);
    const s2 = await openView(second, browser, 'viewer 2');
    st = await s2.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `viewer 2: frames decoded (${JSON.stringify(st)})`);
    c.check(s2.sid !== s1.sid, 'viewer 2: a session of its own');
    const offers = (cam.stderr().match(/offer for leg \S+ revision \d+ sent/g) || []).length;
    c.check(offers === 1, `one camera leg for both viewers: the camera offered once (${offers})`);
    r = await second.command({ msgToken: token('x'), method: 'interaction.end', sessionId: s1.sid, params: { reason: 'userHangup' } });
    c.check(r.status === 404, `viewer 2 cannot end viewer 1's session (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.trackControl', sessionId: s2.sid,
        params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } });
    c.check(r.status === 404, `the device's owner cannot act on another user's session (${JSON.stringify(r.body)})`);
    const owner2 = await app(DEMO.user); // the same user, another endpoint
    r = await owner2.command({ msgToken: token('x'), method: 'interaction.end', sessionId: s1.sid, params: { reason: 'userHangup' } });
    c.check(r.status === 404, `another endpoint of the same user cannot act on the session (${JSON.stringify(r.body)})`);
    // Replays: the same acceptance, no new session, no new media.
    const sessionsBefore = owner.events.filter((e) => e.method === 'interaction.result' && e.data.operation === 'interaction.open').length;
    r = await owner.command(s1.openCmd);
    c.check(r.status === 200 && r.body.data.replay === true, `open replayed (${JSON.stringify(r.body)})`);
    r = await owner.command(s1.offerCmd);
    c.check(r.status === 200 && r.body.data.replay === true, `mediaOffer replayed (${JSON.stringify(r.body)})`);
    await sleep(500);
    await owner.pull();
    c.check(owner.events.filter((e) => e.method === 'interaction.result' && e.data.operation === 'interaction.open' &&
        e.data.sessionId !== s1.sid).length === 0 && sessionsBefore >= 1, 'the replayed open made no new session');

    // ---- subscribe: an independent viewing of the same camera, its own token ------------------
    const subs = [];
    for (let i = 0; i < 2; i++) {
        const ts = token('sub');
        await accepted(c, owner, { msgToken: ts, method: 'interaction.subscribe', sessionId: s1.sid, params: { trackId: 'video-1' } },
            `subscribe ${i + 1}`);
        const sr = await owner.result(ts);
        c.check(sr && sr.code === 200 && sr.sessionId === s1.sid && sr.data.state === 'invited' && sr.data.trackId === 'video-1' &&
            sr.data.sessionId && sr.data.sessionId !== s1.sid && typeof sr.data.playbackToken === 'string',
        `subscribe ${i + 1}: a new session with its playbackToken (${JSON.stringify(sr)})`);
        subs.push(sr && sr.data);
    }
    c.check(subs[0] && subs[1] && subs[0].sessionId !== subs[1].sessionId && subs[0].playbackToken !== subs[1].playbackToken,
        'subscribe: sessions and tokens never shared');
    const s3 = { a: owner, sid: subs[0].sessionId, name: 'subscriber', v: await newViewer(browser) };
    const o3 = await s3.v.offerRecvOnly();
    const t3 = token('offer');
    await accepted(c, owner, { msgToken: t3, method: 'interaction.mediaOffer', sessionId: s3.sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: o3 } } }, 'subscriber: mediaOffer');
    const a3 = await owner.result(t3, 15000);
    c.check(a3 && a3.code === 200 && a3.data.webrtc, `subscriber: the answer (${a3 && a3.code})`);
    await s3.v.setAnswer(a3.data.webrtc.sdp);
    st = await s3.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `subscriber: frames decoded (${JSON.stringify(st)})`);
    // The subscriber's peer vanishes: its session ends alone, the others play on.
    const before = await frames(s1);
    await s3.v.close();
    const vf = await owner.state(s3.sid, 'ended', 45000);
    c.check(vf && vf.data.reason === 'viewerFailed', `subscriber: its peer gone, ended viewerFailed (${JSON.stringify(vf)})`);
    c.check((await frames(s1)) > before, 'viewer 1 plays on after the subscriber vanished');
    const tx = token('end');
    await accepted(c, owner, { msgToken: tx, method: 'interaction.end', sessionId: subs[1].sessionId, params: { reason: 'userStopped' } },
        'subscriber 2: end');
    const ex = await owner.state(subs[1].sessionId, 'ended');
    c.check(ex && ex.data.reason === 'userStopped', `subscriber 2: ended userStopped (${JSON.stringify(ex)})`);
    c.check((cam.stderr().match(/offer for leg \S+ revision \d+ sent/g) || []).length === 1,
        'subscribers ride the same camera leg (the camera offered once)');

    // ---- pause and resume: only this viewer's video stops ----------------------------------
    const p = await track(s1, 'pause');
    c.check(p && p.code === 200 && p.data.state === 'paused' && p.data.trackId === 'video-1' && p.data.mediaRevision === 1,
        `viewer 1: pause result (${JSON.stringify(p)})`);
    await sleep(700);
    const f1 = await frames(s1), g1 = await frames(s2);
    await sleep(1500);
    const f2 = await frames(s1), g2 = await frames(s2);
    c.check(f2 - f1 <= 2, `viewer 1: frames stop while paused (${f1} -> ${f2})`);
    c.check(g2 > g1, `viewer 2: frames go on (${g1} -> ${g2})`);
    const q = await track(s1, 'resume');
    c.check(q && q.code === 200 && q.data.state === 'active', `viewer 1: resume result (${JSON.stringify(q)})`);
    st = await s1.v.waitFor((x) => x.framesDecoded > f2 + 5, 3000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > f2 + 5, `viewer 1: frames again after resume (${JSON.stringify(st && st.framesDecoded)})`);
    r = await s1.a.command({ msgToken: token('x'), method: 'interaction.trackControl', sessionId: s1.sid,
        params: { trackId: 'video-1', operation: 'publish', mediaRevision: 1 } });
    c.check(r.status === 400 && r.body.data.path === '/command/params/operation' && /uplink/.test(r.body.data.reason),
        `publish on a camera track refused before the claim (${JSON.stringify(r.body)})`);
    r = await s1.a.command({ msgToken: token('x'), method: 'interaction.trackControl', sessionId: s1.sid,
        params: { trackId: 'video-1', operation: 'pause', mediaRevision: 2 } });
    c.check(r.status === 409 && r.body.data.path === '/command/params/mediaRevision', `stale mediaRevision refused (${JSON.stringify(r.body)})`);

    // ---- renegotiation: an ICE restart mid-stream is a new media generation (issue 26) ----------
    /** Viewer 1 restarts ICE and offers it as mediaRevision rev; resolves when
     * the answer is applied, with the offer's msgToken. */
    const renegotiate = async (rev) => {
        const sdp = await s1.v.restartIce();
        const t = token('offer');
        await accepted(c, owner, { msgToken: t, method: 'interaction.mediaOffer', sessionId: s1.sid,
            params: { mediaRevision: rev, webrtc: { iceMode: 'full', sdp } } }, `viewer 1: renegotiation to ${rev}`);
        const ans = await owner.result(t, 15000);
        c.check(ans && ans.code === 200 && ans.data.mediaRevision === rev && ans.data.webrtc,
            `viewer 1: generation ${rev} answered (${JSON.stringify(ans && { code: ans.code, rev: ans.data.mediaRevision, reason: ans.data.reason })})`);
        await s1.v.setAnswer(ans.data.webrtc.sdp);
        return sdp;
    };
    const reoffer = await s1.v.restartIce();
    r = await owner.command({ msgToken: token('x'), method: 'interaction.mediaOffer', sessionId: s1.sid,
        params: { mediaRevision: 3, webrtc: { iceMode: 'full', sdp: reoffer } } });
    c.check(r.status === 409 && r.body.data.path === '/command/params/mediaRevision' && /skips ahead/.test(r.body.data.reason),
        `a renegotiation that skips ahead is refused (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.mediaOffer', sessionId: s1.sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: reoffer } } });
    c.check(r.status === 409 && r.body.data.path === '/command/params/mediaRevision', `a repeated revision is refused (${JSON.stringify(r.body)})`);
    const ga = await frames(s2);
    const gaAt = Date.now();
    const fa = await frames(s1);
    await renegotiate(2);
    const answeredAt = Date.now();
    st = await s1.v.waitFor((x) => x.framesDecoded > fa + 10, 5000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > fa + 10, `viewer 1: frames go on after the ICE restart (${fa} -> ${JSON.stringify(st && st.framesDecoded)})`);
    const resumedMs = Date.now() - answeredAt;
    c.check(resumedMs < 1000 + 700, `viewer 1: frames within a second of the answer (${resumedMs} ms, polled)`);
    console.log(`live: renegotiation: answer applied to 10 more frames in ${resumedMs} ms`);
    const est2 = await owner.wait((e) => e.method === 'interaction.state' && e.sessionId === s1.sid &&
        e.data.state === 'established' && e.data.mediaRevision === 2, 5000);
    c.check(est2 && est2.eventSeq === 2, `viewer 1: established again with mediaRevision 2 once its media flows (${JSON.stringify(est2)})`);
    c.check(st && st.connectionState === 'connected', `viewer 1: its connection went on (${st && st.connectionState})`);
    const gb = await frames(s2);
    const fps2 = (gb - ga) / ((Date.now() - gaAt) / 1000);
    c.check(fps2 > 15, `viewer 2: no gap while viewer 1 renegotiated (${fps2.toFixed(1)} frames/s)`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.trackControl', sessionId: s1.sid,
        params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } });
    c.check(r.status === 409 && r.body.data.path === '/command/params/mediaRevision',
        `the old generation's commands are refused (${JSON.stringify(r.body)})`);
    // A paused track stays paused in the next generation.
    const p2 = await track(s1, 'pause', 2);
    c.check(p2 && p2.code === 200 && p2.data.state === 'paused' && p2.data.mediaRevision === 2, `viewer 1: paused at 2 (${JSON.stringify(p2)})`);
    await renegotiate(3);
    await sleep(1000);
    const fp1 = await frames(s1);
    await sleep(1500);
    const fp2 = await frames(s1);
    c.check(fp2 - fp1 <= 2, `viewer 1: still paused in generation 3 (${fp1} -> ${fp2})`);
    const q3 = await track(s1, 'resume', 3);
    c.check(q3 && q3.code === 200 && q3.data.state === 'active', `viewer 1: resumed at 3 (${JSON.stringify(q3)})`);
    st = await s1.v.waitFor((x) => x.framesDecoded > fp2 + 5, 3000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > fp2 + 5, `viewer 1: frames again in generation 3 (${JSON.stringify(st && st.framesDecoded)})`);
    const est3 = await owner.wait((e) => e.method === 'interaction.state' && e.sessionId === s1.sid &&
        e.data.state === 'established' && e.data.mediaRevision === 3, 5000);
    c.check(est3 && est3.eventSeq === 3, `viewer 1: established with mediaRevision 3 (${JSON.stringify(est3)})`);

    // ---- a replay is the same acceptance and no new viewing ---------------------------------
    const te = token('end');
    const endCmd = { msgToken: te, method: 'interaction.end', sessionId: s1.sid, params: { reason: 'userHangup' } };
    await accepted(c, owner, endCmd, 'viewer 1: end');
    const ended = await owner.state(s1.sid, 'ended');
    c.check(ended && ended.data.reason === 'userHangup' && ended.eventSeq === 4, `viewer 1: ended userHangup, eventSeq 4 (${JSON.stringify(ended)})`);
    r = await owner.command(endCmd);
    c.check(r.status === 200 && r.body.data.replay === true, `viewer 1: end replayed (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.mediaState', sessionId: s1.sid, params: { mediaRevision: 1, state: 'connected' } });
    c.check(r.status === 409, `an ended session is never revived (${JSON.stringify(r.body)})`);
    await sleep(1000);
    const h1 = await frames(s2);
    await sleep(1000);
    c.check((await frames(s2)) > h1, 'viewer 2 plays on after viewer 1 left');

    // ---- the camera goes away: every session on it ends ---------------------------------------
    cam.kill('SIGKILL');
    const gone = await second.state(s2.sid, 'ended', 15000);
    c.check(gone && gone.data.reason === 'cameraOffline', `viewer 2: ended cameraOffline when the camera vanished (${JSON.stringify(gone)})`);

    await s1.v.close();
    await s2.v.close();
    await browser.close();
    c.done('live test');
}

main().catch((e) => {
    console.error('live test: FAIL:', e && e.stack ? e.stack : e);
    process.exit(1);
});
