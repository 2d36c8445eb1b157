// talk_media.mjs - ipcTalk end to end with real audio (issue 16), through
// the public API: the stand-in IM's call, interaction.open with purpose
// ipcTalk, Chromium members publishing WebAudio tones, igw-vcam's speaker
// levels (its --speaker-log), /talk/audio-access muting a member while it
// keeps receiving, interaction.join and interaction.leave (self exit, host
// removal, a re-entry caught by expectedMemberEpoch). Run by talk_media.sh
// inside a network namespace, with igwd and the services up.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR (as live_lib.mjs),
// IGW_SPEAKER_LOG (the camera's level log), IGW_IGWD_LOG (igwd's stderr).
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { launch, newViewer, sleep, Checker, AUTOPLAY_ARGS, aiortcTalker } from '../media/lib.mjs';
import { DEMO, target, camera, app, accepted, startCamera, call, speakerLevels } from './live_lib.mjs';

const VCAM = process.env.IGW_VCAM;
const LEVELS = process.env.IGW_SPEAKER_LOG;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const im = (user, path, body) => call(user, `/api/v1/im-standin/${path}`, body);
const access = (user, body) => call(user, '/api/v1/im/interaction/talk/audio-access', body);

/** The camera's speaker levels since `since` (Unix ms): [{at_ms, rms_db}]. */
const levels = (since) => speakerLevels(LEVELS, since);
/** Waits until the camera's level over the last 200 ms satisfies pred; the
 * Unix ms it did, or 0 after ms. Silence is also nothing played at all:
 * the camera's level meter reports only what arrives, so when no talker's
 * packets reach it (the floor passes to nobody) its log has no line; 400 ms
 * without one is silent. */
async function levelUntil(pred, ms) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        const l = levels(Date.now() - 200);
        if (l.length >= 2 && l.every((x) => pred(x.rms_db))) return Date.now();
        if (pred === silent && levels(Date.now() - 400).length === 0) return Date.now();
        await sleep(50);
    }
    return 0;
}
const loud = (db) => db > -35;
const silent = (db) => db < -60;

/** Opens an ipcTalk session on the call for application a, with a Chromium
 * member publishing a tone of hz; waits for its established state. */
async function openTalk(a, browser, callId, hz, name) {
    const v = await newViewer(browser);
    const s = await openTalkPeer(a, callId, name, {
        offer: () => v.offerPublish(hz),
        setAnswer: (sdp) => v.setAnswer(sdp),
        flowing: async () => {
            const st = await v.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0, 15000).catch((e) => e.stats);
            return { ok: st && st.framesDecoded > 0 && st.audioPackets > 0, st };
        },
    });
    return { ...s, v };
}

/** The same with aiortc (a non-browser member, tests/media/aiortc_talker.py). */
async function openTalkAiortc(a, callId, hz, name) {
    const p = await aiortcTalker(hz, `[aiortc ${name}] `);
    const s = await openTalkPeer(a, callId, name, {
        offer: async () => p.offer,
        setAnswer: (sdp) => p.setAnswer(sdp),
        flowing: async () => {
            let st;
            for (let i = 0; i < 150; i++, await sleep(100)) {
                st = await p.stats();
                if (st.recvVideo > 0 && st.recvAudio > 0) break;
            }
            return { ok: st.recvVideo > 0 && st.recvAudio > 0, st };
        },
    });
    return { ...s, p };
}

/** Opens an ipcTalk session for application a with peer (offer, setAnswer,
 * flowing); waits for its established state. */
async function openTalkPeer(a, callId, name, peer) {
    const t = token('open');
    const cmd = { msgToken: t, method: 'interaction.open', target, params: { purpose: 'ipcTalk', cameraId: camera, callId } };
    let r;
    for (let i = 0; i < 150; i++) { // the camera comes online once the broker's presence fact is stored
        r = await a.command(cmd);
        if (!(r.status === 503 && r.body.data.reason === 'the camera is offline')) break;
        await sleep(100);
    }
    c.check(r.status === 200 && r.body.data.accepted === true, `${name}: talk open accepted (${JSON.stringify(r.body)})`);
    const res = await a.result(t);
    const sid = res && res.data.sessionId;
    c.check(res && res.code === 200 && sid, `${name}: the open's result has the session (${JSON.stringify(res)})`);
    const offer = await peer.offer();
    const to = token('offer');
    await accepted(c, a, { msgToken: to, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } }, `${name}: mediaOffer`);
    const ans = await a.result(to, 15000);
    c.check(ans && ans.code === 200 && ans.data.webrtc, `${name}: answered (${JSON.stringify(ans && ans.data && ans.data.reason)})`);
    const audio = ans.data.webrtc.sdp.split(/\r?\nm=/).find((m) => m.startsWith('audio')) || '';
    c.check(/a=sendrecv/.test(audio), `${name}: the answer's audio is two-way (sendrecv)`);
    await peer.setAnswer(ans.data.webrtc.sdp);
    const fl = await peer.flowing();
    c.check(fl.ok, `${name}: receives the camera's picture and its microphone (${JSON.stringify(fl.st)})`);
    const ts = token('state');
    await accepted(c, a, { msgToken: ts, method: 'interaction.mediaState', sessionId: sid, params: { mediaRevision: 1, state: 'connected' } },
        `${name}: mediaState connected`);
    const est = await a.state(sid, 'established');
    c.check(est, `${name}: established`);
    return { a, sid, name };
}

const setTone = (s, gain) => s.v.page.evaluate((g) => { window.__tone.gain.gain.value = g; }, gain);

async function leave(a, sid, callId, participantId, expectedMemberEpoch) {
    const t = token('leave');
    const r = await a.command({ msgToken: t, method: 'interaction.leave', sessionId: sid,
        params: { callId, participantId, expectedMemberEpoch } });
    return { r, t };
}

async function main() {
    const cam = startCamera(VCAM, '[vcam] ', ['--speaker-log', LEVELS]);
    const owner = await app(DEMO.user);       // 1001: starts the call, the initiator
    const second = await app(DEMO.otherUser); // 1002: joined by the owner, talks too
    const browser = await launch({ args: AUTOPLAY_ARGS });

    // ---- before a call: no talk -----------------------------------------------------------------
    let r = await owner.command({ msgToken: token('x'), method: 'interaction.open', target,
        params: { purpose: 'ipcTalk', cameraId: camera, callId: 'c-no-such-call' } });
    c.check(r.status === 404 && r.body.data.path === '/command/params/callId' && !r.body.data.accepted,
        `talk on an unknown call: 404 before anything is claimed (${JSON.stringify(r.body)})`);
    r = await im(DEMO.user, 'calls/start', { groupId: DEMO.group.groupId });
    c.check(r.status === 200, `the owner starts a call of the demo group (${JSON.stringify(r.body)})`);
    const callId = r.body.data.callId;
    // The members' IM clients keep their memberships alive.
    const beating = new Set([DEMO.user]);
    const beat = setInterval(() => { for (const u of beating) im(u, 'calls/heartbeat', { callId }).catch(() => {}); }, 3000);
    r = await second.command({ msgToken: token('x'), method: 'interaction.open', target,
        params: { purpose: 'ipcTalk', cameraId: camera, callId } });
    c.check(r.status === 403 && r.body.data.path === '/command/params/callId',
        `a group member not in the call cannot talk: no auto-join (${JSON.stringify(r.body)})`);

    // ---- the owner talks: its tone reaches the camera's speaker ------------------------------------
    const s1 = await openTalk(owner, browser, callId, 440, 'owner');
    const heard = await levelUntil(loud, 10000);
    c.check(heard > 0, `the owner's tone reaches the camera's speaker (last levels ${JSON.stringify(levels(Date.now() - 300).map((x) => x.rms_db))})`);
    let rx = -200;
    for (let i = 0; i < 30 && rx < -40; i++) {
        rx = await s1.v.recvLevel();
        if (rx < -40) await sleep(100);
    }
    c.check(rx > -40, `the camera's microphone tone reaches the owner (received level ${rx.toFixed(1)} dBFS)`);

    // ---- a live view on the leg that carries the talk only receives (issue 24, item 6) ------------
    const tl = token('open');
    await accepted(c, owner, { msgToken: tl, method: 'interaction.open', target,
        params: { purpose: 'ipcLiveView', cameraId: camera, listenAudio: true } }, 'live view beside the talk: open');
    const lres = await owner.result(tl);
    const lsid = lres && lres.data.sessionId;
    c.check(lres && lres.code === 200 && lsid, `live view beside the talk: a session (${JSON.stringify(lres)})`);
    const lv = await newViewer(browser);
    const lto = token('offer');
    await accepted(c, owner, { msgToken: lto, method: 'interaction.mediaOffer', sessionId: lsid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: await lv.offerPublish(660) } } },
    'live view beside the talk: a sendrecv offer');
    const lans = await owner.result(lto, 15000);
    c.check(lans && lans.code === 100400 && /only receives/.test(lans.data.reason),
        `live view beside the talk: its offer sending audio is refused by its purpose (${JSON.stringify(lans)})`);
    await lv.close();
    await accepted(c, owner, { msgToken: token('end'), method: 'interaction.end', sessionId: lsid, params: { reason: 'userHangup' } },
        'live view beside the talk: end');

    // ---- a second member: joined by the owner (members on), then talks ------------------------------
    let t = token('join');
    await accepted(c, owner, { msgToken: t, method: 'interaction.join', sessionId: s1.sid, params: { participantId: '1002' } },
        'owner: interaction.join of 1002');
    let res = await owner.result(t);
    c.check(res && res.code === 200 && res.data.state === 'joined', `join result (${JSON.stringify(res)})`);
    beating.add(DEMO.otherUser);
    const s2 = await openTalk(second, browser, callId, 880, 'member 1002');
    await setTone(s1, 0); // the owner goes quiet: the floor passes to 1002
    const heard2 = await levelUntil(loud, 5000);
    c.check(heard2 > 0, `member 1002's tone reaches the camera once the owner is quiet (${JSON.stringify(levels(Date.now() - 300).map((x) => x.rms_db))})`);

    // ---- the initiator mutes 1002: its audio stops reaching the camera; it still receives -------------
    r = await access(DEMO.user, { operation: 'read', callId, targetUserID: '1002' });
    c.check(r.status === 200 && r.body.data.publishAllowed === true, `read 1002's permission (${JSON.stringify(r.body)})`);
    const rev = r.body.data.audioRevision;
    const epoch2 = r.body.data.memberEpoch;
    const muteAt = Date.now();
    r = await access(DEMO.user, { operation: 'set', callId, targetUserID: '1002', allowed: false, expectedRevision: rev });
    c.check(r.status === 200 && r.body.data.publishAllowed === false && r.body.data.audioRevision === rev + 1,
        `the initiator sets 1002 allowed=false (${JSON.stringify(r.body)})`);
    const quiet = await levelUntil(silent, 5000);
    c.check(quiet > 0, `1002's audio stops reaching the camera (${JSON.stringify(levels(Date.now() - 300).map((x) => x.rms_db))})`);
    let muteLog = false;
    for (let i = 0; i < 20 && !muteLog; i++, await sleep(100))
        muteLog = readFileSync(process.env.IGW_IGWD_LOG, 'utf8').includes(`session ${s2.sid}: publish muted`);
    c.check(muteLog, 'igwd closed 1002\'s gate (log)');
    if (quiet > 0)
        console.log(`talk: mute to silence at the camera within ${quiet - muteAt} ms (200 ms level window)`);
    const f0 = (await s2.v.stats()).framesDecoded;
    await sleep(1000);
    const f1 = (await s2.v.stats()).framesDecoded;
    c.check(f1 > f0, `muted 1002 still receives the picture (${f0} -> ${f1})`);
    r = await access(DEMO.user, { operation: 'set', callId, targetUserID: '1002', allowed: true, expectedRevision: rev + 1 });
    c.check(r.status === 200 && r.body.data.publishAllowed === true, `1002 allowed again (${JSON.stringify(r.body)})`);
    c.check(await levelUntil(loud, 5000) > 0, '1002 is heard again');

    // ---- a re-entry between reading and removing: expectedMemberEpoch catches it ----------------------
    r = await im(DEMO.thirdUser, 'calls/join', { callId }); // a third member: the call outlives 1002's exit
    c.check(r.status === 200, `1003 joins the call (${JSON.stringify(r.body)})`);
    beating.add(DEMO.thirdUser);
    r = await im(DEMO.otherUser, 'calls/hangup', { callId });
    c.check(r.status === 200 && r.body.data.ended === false, `1002 hangs up in the IM (${JSON.stringify(r.body)})`);
    const gone = await second.state(s2.sid, 'ended', 10000);
    c.check(gone && gone.data.reason === 'memberLeft', `1002's talk session is revoked by the media owner (${JSON.stringify(gone)})`);
    r = await im(DEMO.otherUser, 'calls/join', { callId });
    c.check(r.status === 200 && r.body.data.memberEpoch === epoch2 + 1, `1002 re-enters: memberEpoch ${epoch2 + 1} (${JSON.stringify(r.body)})`);

    let l = await leave(owner, s1.sid, callId, '1002', epoch2);
    c.check(l.r.status === 400 && l.r.body.data.path === '/command/params/expectedMemberEpoch' && !l.r.body.data.accepted,
        `host removal with the old instance is refused, nothing accepted (${JSON.stringify(l.r.body)})`);
    l = await leave(second, s2.sid, callId, '1002', epoch2 + 1);
    c.check(l.r.status === 409 || l.r.status === 404, `a leave on an ended session is refused (${JSON.stringify(l.r.body)})`);
    r = await owner.command({ msgToken: token('x'), method: 'interaction.leave', sessionId: s1.sid,
        params: { callId: 'c-other', participantId: '1002', expectedMemberEpoch: epoch2 + 1 } });
    c.check(r.status === 400 && r.body.data.path === '/command/params/callId', `leave names another call: refused (${JSON.stringify(r.body)})`);

    // ---- host removal of the current instance ----------------------------------------------------------
    l = await leave(owner, s1.sid, callId, '1002', epoch2 + 1);
    c.check(l.r.status === 200 && l.r.body.data.accepted === true, `host removal accepted (${JSON.stringify(l.r.body)})`);
    res = await owner.result(l.t);
    c.check(res && res.code === 200 && JSON.stringify(Object.keys(res.data).sort()) ===
        JSON.stringify(['callId', 'ended', 'memberEpoch', 'operation', 'participantId', 'remaining']) &&
        res.data.participantId === '1002' && res.data.memberEpoch === epoch2 + 1 && res.data.ended === false &&
        JSON.stringify(res.data.remaining) === '["1001","1003"]' && res.data.callId === callId,
        `the leave result is exactly the six facts (${JSON.stringify(res)})`);
    const seqBefore = owner.events.filter((e) => e.method === 'interaction.state' && e.sessionId === s1.sid).length;
    r = await owner.command({ msgToken: l.t, method: 'interaction.leave', sessionId: s1.sid,
        params: { callId, participantId: '1002', expectedMemberEpoch: epoch2 + 1 } });
    c.check(r.status === 200 && r.body.data.replay === true, `the leave replayed with its token: replay (${JSON.stringify(r.body)})`);
    r = await im(DEMO.user, 'calls/roster', { callId });
    c.check(r.status === 200 && JSON.stringify(r.body.data.members.map((m) => m.userId).sort()) === '["1001","1003"]',
        `the replay removed nobody again (${JSON.stringify(r.body)})`);
    c.check(owner.events.filter((e) => e.method === 'interaction.state' && e.sessionId === s1.sid).length === seqBefore,
        'the leave result did not advance the owner\'s eventSeq');

    // ---- an interruption after the claim: the result never written -----------------------------------------
    // (as after a crash between the runtime's write and the result's commit)
    const psql = (sql) => spawnSync(process.env.IGW_SERVICES, ['psql', '-XAtq', '-c', sql], { encoding: 'utf8' });
    const dropResult = () => psql(`DELETE FROM deliveries WHERE event_id IN (SELECT event_id FROM events WHERE msg_token = '${l.t}');
                                   DELETE FROM events WHERE msg_token = '${l.t}'`);
    const replayLeave = async () => {
        const from = owner.events.length;
        const rr = await owner.command({ msgToken: l.t, method: 'interaction.leave', sessionId: s1.sid,
            params: { callId, participantId: '1002', expectedMemberEpoch: epoch2 + 1 } });
        const ev = await owner.wait((e) => e.method === 'interaction.result' && e.msgToken === l.t, 5000, from);
        return { rr, ev };
    };
    dropResult();
    let rp = await replayLeave();
    c.check(rp.rr.status === 200 && rp.rr.body.data.replay === true && rp.ev && rp.ev.code === 200 &&
        rp.ev.data.participantId === '1002' && rp.ev.data.memberEpoch === epoch2 + 1 &&
        JSON.stringify(rp.ev.data.remaining) === '["1001","1003"]',
        `a pending leave's replay reads its receipt: the original result (${JSON.stringify(rp)})`);
    r = await im(DEMO.user, 'calls/roster', { callId });
    c.check(r.status === 200 && r.body.data.members.length === 2, 'the receipt\'s replay ran nothing again');
    dropResult();
    const key = createHash('sha256').update(`${DEMO.user.enterpriseId}\n${owner.ep}\n${l.t}`).digest('hex').slice(0, 32);
    const rk = `igw:{call:${callId}}:rcpt`;
    c.check(spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', process.env.IGW_REDIS_PORT, 'HDEL', rk, key], { encoding: 'utf8' }).stdout.trim() === '1',
        'the leave\'s receipt is in Redis under its key');
    rp = await replayLeave();
    c.check(rp.rr.status === 200 && rp.rr.body.data.replay === true && rp.ev && rp.ev.code === 100504,
        `with no receipt the outcome is unknown, nothing runs again (${JSON.stringify(rp.ev)})`);

    // ---- the call's receipts full: new control refused before the claim, nothing evicted -------------------
    const rkey = `igw:{call:${callId}}:rcpt`;
    const rcli = (...a) => spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', process.env.IGW_REDIS_PORT, ...a], { encoding: 'utf8' }).stdout.trim();
    const held = Number(rcli('HLEN', rkey));
    const fill = [];
    for (let i = held; i < 256; i++) fill.push(`filler${i}`, '1 0 1001');
    rcli('HSET', rkey, ...fill);
    l = await leave(owner, s1.sid, callId, '1001', 1);
    c.check(l.r.status === 429 && !l.r.body.data.accepted, `receipts full: the leave is refused, not accepted (${JSON.stringify(l.r.body)})`);
    c.check(Number(rcli('HLEN', rkey)) === 256, 'receipts full: nothing evicted');
    rcli('HDEL', rkey, ...fill.filter((_, i) => i % 2 === 0));

    // ---- a non-browser member (aiortc) as the only talker: gated, then heard again (issue 26) -------------
    // The owner's tone is at gain 0 (Chromium's level extension says silence):
    // 1003's aiortc tone, with aiortc's own RTP clock and level extension, is
    // the only activity on the floor.
    const third = await app(DEMO.thirdUser);
    const s3 = await openTalkAiortc(third, callId, 440, 'member 1003 (aiortc)');
    const lastLevels = () => JSON.stringify(levels(Date.now() - 300).map((x) => x.rms_db));
    c.check(await levelUntil(loud, 10000) > 0, `1003's aiortc tone reaches the camera (${lastLevels()})`);
    r = await access(DEMO.user, { operation: 'read', callId, targetUserID: '1003' });
    const rev3 = r.body.data.audioRevision;
    r = await access(DEMO.user, { operation: 'set', callId, targetUserID: '1003', allowed: false, expectedRevision: rev3 });
    c.check(r.status === 200 && r.body.data.publishAllowed === false, `the initiator sets 1003 allowed=false (${JSON.stringify(r.body)})`);
    c.check(await levelUntil(silent, 5000) > 0, `1003's aiortc audio stops reaching the camera (${lastLevels()})`);
    await sleep(3000); // well past the camera's "no packets for 1 s"
    r = await access(DEMO.user, { operation: 'set', callId, targetUserID: '1003', allowed: true, expectedRevision: rev3 });
    c.check(r.status === 400 && r.body.data.path === '/expectedRevision', `a stale revision changes nothing (${JSON.stringify(r.body)})`);
    r = await access(DEMO.user, { operation: 'set', callId, targetUserID: '1003', allowed: true, expectedRevision: rev3 + 1 });
    c.check(r.status === 200 && r.body.data.publishAllowed === true, `1003 allowed again (${JSON.stringify(r.body)})`);
    c.check(await levelUntil(loud, 5000) > 0,
        `1003's aiortc tone is heard again after the gate reopened (${lastLevels()}, ${JSON.stringify(await s3.p.stats())})`);

    // ---- 1003 mutes its own microphone: trackControl stop / publish on its uplink, no hang-up ----------------
    let tct;
    const tc = (operation, trackId) => third.command({ msgToken: (tct = token('tc')), method: 'interaction.trackControl',
        sessionId: s3.sid, params: { trackId, operation, mediaRevision: 1 } });
    r = await tc('stop', 'video-1');
    c.check(r.status === 400 && r.body.data.path === '/command/params/operation',
        `stop on the camera's video is refused: it is not the application's uplink (${JSON.stringify(r.body)})`);
    r = await tc('pause', 'speaker');
    c.check(r.status === 400 && r.body.data.path === '/command/params/operation',
        `pause on the uplink is refused: the uplink is stopped or published (${JSON.stringify(r.body)})`);
    r = await tc('stop', 'speaker');
    c.check(r.status === 200 && r.body.data.accepted === true, `1003 stops its uplink (${JSON.stringify(r.body)})`);
    res = await third.result(tct);
    c.check(res && res.code === 200 && res.data.state === 'stopped' && res.data.trackId === 'speaker' && res.data.mediaRevision === 1,
        `the stop's result: speaker stopped (${JSON.stringify(res)})`);
    c.check(await levelUntil(silent, 5000) > 0, `1003's own mute: silence at the camera (${lastLevels()})`);
    const sentBefore = (await s3.p.stats()).sent;
    await sleep(1500);
    c.check((await s3.p.stats()).sent > sentBefore + 40, '1003 still sends while muted (the platform stops it, not the app)');
    c.check(!third.events.some((e) => e.method === 'interaction.state' && e.sessionId === s3.sid && e.data.state === 'ended'),
        '1003\'s session is not ended by its mute');
    r = await tc('publish', 'speaker');
    c.check(r.status === 200, `1003 publishes its uplink again (${JSON.stringify(r.body)})`);
    res = await third.result(tct);
    c.check(res && res.code === 200 && res.data.state === 'active', `the publish's result: speaker active (${JSON.stringify(res)})`);
    c.check(await levelUntil(loud, 5000) > 0, `1003's own unmute: heard again (${lastLevels()})`);
    await accepted(c, third, { msgToken: token('end'), method: 'interaction.end', sessionId: s3.sid, params: { reason: 'userHangup' } },
        '1003: end');
    await s3.p.close();

    // ---- self exit: with one member left the call ends ---------------------------------------------------
    l = await leave(owner, s1.sid, callId, '1001', 1);
    c.check(l.r.status === 200, `the owner leaves (${JSON.stringify(l.r.body)})`);
    res = await owner.result(l.t);
    c.check(res && res.code === 200 && res.data.participantId === '1001' && res.data.ended === true &&
        JSON.stringify(res.data.remaining) === '["1003"]', `self exit: the head-count rule ended the call (${JSON.stringify(res)})`);
    const end1 = await owner.state(s1.sid, 'ended', 10000);
    c.check(end1 && (end1.data.reason === 'memberLeft' || end1.data.reason === 'callEnded'),
        `the owner's talk session ends with the call (${JSON.stringify(end1)})`);
    // The leave's replay after it ended the leaver's own session: the replay
    // rule, and its original result again (issue 26, item 4).
    const fromReplay = owner.events.length;
    r = await owner.command({ msgToken: l.t, method: 'interaction.leave', sessionId: s1.sid,
        params: { callId, participantId: '1001', expectedMemberEpoch: 1 } });
    c.check(r.status === 200 && r.body.data.accepted === true && r.body.data.replay === true,
        `the self exit's replay after its session ended: accepted, replay (${JSON.stringify(r.body)})`);
    const again = await owner.wait((e) => e.method === 'interaction.result' && e.msgToken === l.t, 5000, fromReplay);
    c.check(again && again.code === 200 && again.data.participantId === '1001' && again.data.ended === true,
        `the replay redelivers the original result (${JSON.stringify(again)})`);
    r = await owner.command({ msgToken: l.t, method: 'interaction.leave', sessionId: s1.sid,
        params: { callId, participantId: '1003', expectedMemberEpoch: 1 } });
    c.check(r.status === 409 && r.body.data.path === '/command/msgToken',
        `the same token with another body after the end: conflict (${JSON.stringify(r.body)})`);
    let over = false; // no sound in the last half second (the leg is gone: no lines at all, or silence)
    for (let i = 0; i < 50 && !over; i++, await sleep(100))
        over = levels(Date.now() - 500).every((x) => silent(x.rms_db));
    c.check(over, 'the camera hears nothing once the talk is over');

    clearInterval(beat);
    await browser.close();
    cam.kill('SIGTERM');
    await cam.waitExit(10000).catch(() => cam.kill('SIGKILL')); // the next test's camera takes its client id
    c.done('talk media');
}

main().catch((e) => { console.error(e); process.exit(1); });
