// playback_test.mjs - recordings end to end (issue 17), through the public
// API: igw-vcam records segments and reports them, /recordings/query finds
// them, and recordPlayback sessions play them in Chromium: loaded and ready
// as separate events, no frame before play, play (frames decoded), pause
// (frames stop), seek, the end of the recording, a clip refused, a version
// change and the camera killed mid-playback each ending the session with a
// reason. Run by playback_test.sh inside a network namespace, with igwd and
// the services up.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR (as live_lib.mjs),
// IGW_REC_DIR (the camera's recordings), IGW_IGWD_LOG (igwd's stderr).
import { launch, newViewer, sleep, Checker } from '../media/lib.mjs';
import { DEMO, target, camera, app, accepted, startCamera, call, deviceSend } from './live_lib.mjs';

const VCAM = process.env.IGW_VCAM;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const SEGMENT_MS = 2500;

function query(user, ep, startTimeMs, endTimeMs, limit, cameraId = camera) {
    return call(user, '/api/v1/im/interaction/recordings/query',
        { endpointId: ep, target, cameraId, startTimeMs, endTimeMs, limit });
}

/** The camera's catalog report, as the camera would send it (its own credentials). */
const report = (params) => deviceSend('media/recording', { method: 'report', msgToken: token('rep'), params });

const pbEvent = (a, sid, playback, from = 0, ms = 15000) =>
    a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.playback === playback, ms, from);
const ended = (a, sid, ms = 15000) => a.state(sid, 'ended', ms);

/** Opens a playback of rec for application a and gets it to ready in a new
 * Chromium viewer: {sid, v}. */
async function openPlayback(a, browser, rec, name) {
    let t, r;
    for (let i = 0; i < 150; i++) { // a camera (re)starting is online once the broker's presence fact is stored
        t = token('open');
        r = await a.command({ msgToken: t, method: 'interaction.open', target,
            params: { purpose: 'recordPlayback', cameraId: camera, recordingId: rec.recordingId } });
        if (r.status !== 503) break;
        await sleep(100);
    }
    c.check(r.status === 200 && r.body.data.accepted === true, `${name}: open accepted (${JSON.stringify(r.body)})`);
    const res = await a.result(t);
    const sid = res && res.data.sessionId;
    c.check(res && res.code === 200 && res.data.state === 'invited' && sid, `${name}: invited (${JSON.stringify(res)})`);
    const early = await a.command({ msgToken: token('early'), method: 'interaction.playbackControl', sessionId: sid,
        params: { operation: 'play', mediaRevision: 1 } });
    c.check(early.status === 409 && early.body.data.path === '/command/params/operation' && !early.body.data.accepted,
        `${name}: play before ready is refused, nothing accepted (${JSON.stringify(early.body)})`);
    const v = await newViewer(browser);
    const offer = await v.offerRecvOnly();
    const to = token('offer');
    await accepted(c, a, { msgToken: to, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } }, `${name}: mediaOffer`);
    const loaded = await pbEvent(a, sid, 'loaded');
    c.check(loaded && loaded.data.state === 'invited' && loaded.data.positionMs === 0,
        `${name}: the loaded event, before ready (${JSON.stringify(loaded)})`);
    const ans = await a.result(to, 15000);
    c.check(ans && ans.code === 200 && ans.data.webrtc, `${name}: answered (${JSON.stringify(ans && ans.data)})`);
    await v.setAnswer(ans.data.webrtc.sdp);
    await v.waitFor((s) => s.connectionState === 'connected', 15000).catch(() => {});
    await accepted(c, a, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } }, `${name}: mediaState connected`);
    const ready = await pbEvent(a, sid, 'ready');
    c.check(ready && ready.data.state === 'established', `${name}: ready, with the session established (${JSON.stringify(ready)})`);
    c.check(loaded && ready && ready.eventSeq > loaded.eventSeq, `${name}: loaded, then ready: separate events`);
    return { sid, v };
}

async function control(a, sid, params, name) {
    const t = token('pb');
    await accepted(c, a, { msgToken: t, method: 'interaction.playbackControl', sessionId: sid,
        params: { mediaRevision: 1, ...params } }, `${name}: ${params.operation} accepted`);
    const res = await a.result(t, 10000);
    c.check(res && res.code === 200, `${name}: ${params.operation} done (${JSON.stringify(res)})`);
    return res ? res.data : {};
}

async function main() {
    const cam0 = Date.now();
    let cam = startCamera(VCAM, '[vcam] ', ['--record-dir', process.env.IGW_REC_DIR,
        '--segment-ms', String(SEGMENT_MS), '--retain-s', '600']);
    const owner = await app(DEMO.user);
    const other = await app(DEMO.otherUser);
    const foreign = await app(DEMO.otherEnterpriseUser);
    const browser = await launch();

    // ---- the catalog: what the camera recorded ------------------------------------------------
    let list = [];
    for (let i = 0; i < 200 && list.length < 4; i++) {
        const r = await query(DEMO.user, owner.ep, cam0 - 60000, Date.now() + 60000, 32);
        if (r.status === 200) list = r.body.data.list;
        if (list.length < 4) await sleep(250);
    }
    c.check(list.length >= 4, `the camera's segments are in the catalog (${list.length} in ${Date.now() - cam0} ms)`);
    if (list.length < 4) c.done('playback test');
    const ok = list.every((x, i) => x.endTimeMs > x.startTimeMs && x.durationMs > 0 && x.durationMs <= x.endTimeMs - x.startTimeMs &&
        x.videoCodec === 'H264' && x.audioCodec === 'opus' && x.available === true && x.recordingVersion >= 1 &&
        x.cameraId === camera && (i === 0 || x.startTimeMs >= list[i - 1].startTimeMs));
    c.check(ok, `every entry is a real segment, in start order (${JSON.stringify(list.slice(0, 2))})`);
    c.check(list.every((x) => Object.keys(x).every((k) => ['recordingId', 'cameraId', 'startTimeMs', 'endTimeMs', 'durationMs',
        'available', 'videoCodec', 'audioCodec', 'recordingVersion'].includes(k))), 'no address, path or secret in an entry');
    let r = await query(DEMO.user, owner.ep, cam0 - 60000, Date.now() + 60000, 1);
    c.check(r.status === 200 && r.body.data.list.length === 1 && r.body.data.hasMore === true &&
        r.body.data.list[0].recordingId === list[0].recordingId, `limit 1: the first, hasMore (${JSON.stringify(r.body.data)})`);
    r = await query(DEMO.user, owner.ep, list[1].startTimeMs, list[2].startTimeMs, 32);
    c.check(r.status === 200 && r.body.data.list.length === 1 && r.body.data.list[0].recordingId === list[1].recordingId &&
        r.body.data.hasMore === false, `a window from one start to the next: exactly that one (${JSON.stringify(r.body.data)})`);
    r = await query(DEMO.otherUser, other.ep, cam0 - 60000, Date.now(), 32);
    c.check(r.status === 403 && r.body.data.path === '/target', `another user of the enterprise: 403 (${JSON.stringify(r.body)})`);
    r = await query(DEMO.otherEnterpriseUser, foreign.ep, cam0 - 60000, Date.now(), 32);
    c.check(r.status === 403, `another enterprise: 403 (${JSON.stringify(r.body)})`);

    // ---- refusals before anything is claimed ----------------------------------------------------
    r = await owner.command({ msgToken: token('clip'), method: 'interaction.open', target,
        params: { purpose: 'recordPlayback', cameraId: camera, recordingId: list[0].recordingId, clip: { startMs: 0, endMs: 1000 } } });
    c.check(r.status === 501 && r.body.data.path === '/command/params/clip' && !r.body.data.accepted,
        `a valid partial clip is refused as unsupported (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('nope'), method: 'interaction.open', target,
        params: { purpose: 'recordPlayback', cameraId: camera, recordingId: 'rec-no-such-one' } });
    c.check(r.status === 404 && r.body.data.path === '/command/params/recordingId', `an unknown recording: 404 (${JSON.stringify(r.body)})`);
    r = await other.command({ msgToken: token('rights'), method: 'interaction.open', target,
        params: { purpose: 'recordPlayback', cameraId: camera, recordingId: list[0].recordingId } });
    c.check(r.status === 403, `another user cannot play the owner's recording (${JSON.stringify(r.body)})`);

    // ---- play, pause, seek, the end -------------------------------------------------------------
    const p1 = await openPlayback(owner, browser, list[0], 'p1');
    await sleep(1500);
    let st = await p1.v.stats();
    c.check(st.framesDecoded === 0 && st.videoPackets === 0 && st.audioPackets === 0,
        `p1: ready, and nothing received before play (${JSON.stringify(st)})`);
    const t0 = Date.now();
    let d = await control(owner, p1.sid, { operation: 'play' }, 'p1');
    c.check(d.state === 'playing' && d.operation === 'interaction.playbackControl' && typeof d.positionMs === 'number',
        `p1: the result says playing (${JSON.stringify(d)})`);
    st = await p1.v.waitFor((s) => s.framesDecoded > 0, 5000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `p1: frames decoded after play (${Date.now() - t0} ms; ${JSON.stringify(st)})`);
    const playing = await pbEvent(owner, p1.sid, 'playing');
    c.check(playing && playing.data.state === 'established', `p1: the playing event (${JSON.stringify(playing)})`);
    await sleep(400);
    d = await control(owner, p1.sid, { operation: 'pause' }, 'p1');
    c.check(d.state === 'paused' && d.positionMs > 0 && d.positionMs < list[0].durationMs,
        `p1: paused inside the recording (${JSON.stringify(d)})`);
    await sleep(400);
    const f1 = (await p1.v.stats()).framesDecoded;
    await sleep(1200);
    const f2 = (await p1.v.stats()).framesDecoded;
    c.check(f2 === f1, `p1: no frames while paused (${f1} -> ${f2})`);
    d = await control(owner, p1.sid, { operation: 'seek', positionMs: 1000 }, 'p1');
    c.check(d.state === 'paused' && d.positionMs >= 0 && Math.abs(d.positionMs - 1000) <= 1100 && d.positionMs < list[0].durationMs,
        `p1: seek to 1000 ms lands on the key frame nearest it (a key interval of 1 s), still paused (${JSON.stringify(d)})`);
    r = await owner.command({ msgToken: token('far'), method: 'interaction.playbackControl', sessionId: p1.sid,
        params: { operation: 'seek', positionMs: list[0].durationMs, mediaRevision: 1 } });
    c.check(r.status === 400 && r.body.data.path === '/command/params/positionMs', `p1: a seek beyond the recording: 400 (${JSON.stringify(r.body)})`);
    r = await owner.command({ msgToken: token('unix'), method: 'interaction.playbackControl', sessionId: p1.sid,
        params: { operation: 'seek', positionMs: Date.now(), mediaRevision: 1 } });
    c.check(r.status === 400, `p1: a Unix time as a position: 400 (${JSON.stringify(r.body)})`);
    const f3 = (await p1.v.stats()).framesDecoded;
    d = await control(owner, p1.sid, { operation: 'play' }, 'p1');
    st = await p1.v.waitFor((s) => s.framesDecoded > f3, 5000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > f3, `p1: frames again after play (${f3} -> ${st && st.framesDecoded})`);
    const end = await ended(owner, p1.sid, list[0].durationMs + 8000);
    c.check(end && end.data.reason === 'recordingEnded', `p1: played to its end, ended recordingEnded (${JSON.stringify(end)})`);
    await p1.v.close();

    // ---- the catalog changes the recording under a playback ---------------------------------------
    const p2 = await openPlayback(owner, browser, list[1], 'p2');
    const changed = { ...list[1], recordingVersion: list[1].recordingVersion + 1 };
    r = await report({ recordings: [changed] });
    c.check(r.status === 200 && r.body.data.data.stored === 1, `the camera reports a new version (${JSON.stringify(r.body)})`);
    const e2 = await ended(owner, p2.sid, 8000);
    c.check(e2 && e2.data.reason === 'recordingChanged', `p2: ended recordingChanged (${JSON.stringify(e2)})`);
    await p2.v.close();
    // The catalog's version is now one the camera does not have: the camera says so.
    r = await owner.command({ msgToken: token('open'), method: 'interaction.open', target,
        params: { purpose: 'recordPlayback', cameraId: camera, recordingId: list[1].recordingId } });
    const res = r.status === 200 ? await owner.result(r.body.data.msgToken) : null;
    const e3 = res && res.data.sessionId ? await ended(owner, res.data.sessionId, 10000) : null;
    c.check(e3 && e3.data.reason === 'recordingChanged', `a version the camera does not hold: its bye ends the session recordingChanged (${JSON.stringify(e3)})`);

    // ---- the camera killed mid-playback ------------------------------------------------------------
    const p3 = await openPlayback(owner, browser, list[2], 'p3');
    await control(owner, p3.sid, { operation: 'play' }, 'p3');
    await p3.v.waitFor((s) => s.framesDecoded > 0, 5000).catch(() => {});
    cam.kill('SIGKILL');
    const e4 = await ended(owner, p3.sid, 10000);
    c.check(e4 && e4.data.reason === 'cameraOffline', `p3: the camera killed: ended cameraOffline (${JSON.stringify(e4)})`);
    await p3.v.close();
    let off;
    for (let i = 0; i < 50; i++) {
        off = await owner.command({ msgToken: token('off'), method: 'interaction.open', target,
            params: { purpose: 'recordPlayback', cameraId: camera, recordingId: list[3].recordingId } });
        if (off.status === 503) break;
        await sleep(100);
    }
    c.check(off.status === 503 && /no cloud playback/.test(off.body.data.reason) && !off.body.data.accepted,
        `offline: the recording cannot play, no cloud playback promised (${JSON.stringify(off.body)})`);

    // ---- the camera back: a user ends a playback ------------------------------------------------------
    cam = startCamera(VCAM, '[vcam2] ', ['--record-dir', process.env.IGW_REC_DIR, '--segment-ms', String(SEGMENT_MS), '--retain-s', '600']);
    const p4 = await openPlayback(owner, browser, list[3], 'p4');
    const te = token('end');
    await accepted(c, owner, { msgToken: te, method: 'interaction.end', sessionId: p4.sid, params: { reason: 'userStopped' } }, 'p4: end');
    const e5 = await ended(owner, p4.sid, 8000);
    c.check(e5 && e5.data.reason === 'userStopped', `p4: ended by its user (${JSON.stringify(e5)})`);
    await p4.v.close();
    cam.kill('SIGTERM');
    await cam.waitExit(5000).catch(() => {});
    await browser.close();
    c.done('playback test');
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
