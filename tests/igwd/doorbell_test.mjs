// doorbell_test.mjs - the door-bell end to end (issue 25), through the
// public API and the camera as a real device: igw-vcam rings (SIGUSR1);
// two endpoints of the owner and one of a granted user ring; one accepts
// and, in Chromium, sees the camera and is heard at its speaker (igw-vcam's
// level log); the others end answered elsewhere, exactly once; a late
// accept fails and changes nothing; declines, no answer, a second ring
// joining the first; bad input refused with nothing changed. Run by
// doorbell_test.sh inside a network namespace, with igwd and the services up.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR (as live_lib.mjs),
// IGW_SPEAKER_LOG (the camera's level log), IGW_PG_DSN.
import { readFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { launch, newViewer, sleep, Checker, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, target, camera, app, accepted, startCamera, deviceSend } from './live_lib.mjs';

const VCAM = process.env.IGW_VCAM;
const LEVELS = process.env.IGW_SPEAKER_LOG;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const sql = (q) => spawnSync('psql', [process.env.IGW_PG_DSN, '-XAtq', '-c', q], { encoding: 'utf8' }).stdout.trim();

function levels(since) {
    if (!existsSync(LEVELS)) return [];
    return readFileSync(LEVELS, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
        .filter((x) => x.at_ms >= since);
}
async function loudWithin(ms) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
        const l = levels(Date.now() - 200);
        if (l.length >= 2 && l.every((x) => x.rms_db > -35)) return true;
        await sleep(50);
    }
    return false;
}

/** The camera's button: SIGUSR1; its ringReply as igw-vcam logs it. */
async function ring(cam, name) {
    const from = cam.stderr().length;
    process.kill(cam.pid, 'SIGUSR1');
    for (let i = 0; i < 100; i++) {
        const m = /ring (\S+) (answered: session (\S+)|refused: code (\d+))/.exec(cam.stderr().slice(from));
        if (m) return m[3] ? { session: m[3] } : { code: Number(m[4]) };
        await sleep(50);
    }
    c.check(false, `${name}: the camera's ring got no reply`);
    return {};
}

/** The ringing event of the ring on application a. */
const ringing = (a, ms = 5000, from = 0) =>
    a.wait((e) => e.method === 'interaction.state' && e.data.state === 'ringing', ms, from);

/** Every `ended` event of session sid on a (after pulling for ms). */
async function endedOf(a, sid, ms) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) { await a.pull(); await sleep(100); }
    return a.events.filter((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.state === 'ended');
}

const control = (a, sid, operation, inviteToken, t = token(operation)) =>
    a.command({ msgToken: t, method: 'interaction.control', sessionId: sid,
        params: { operation, args: { inviteToken } } }).then((r) => ({ ...r, t }));

async function main() {
    const cam = startCamera(VCAM, '[vcam] ', ['--speaker-log', LEVELS]);
    const owner1 = await app(DEMO.user);
    const owner2 = await app(DEMO.user);
    const other = await app(DEMO.otherUser); // granted the device by doorbell_test.sh
    const apps = [owner1, owner2, other];
    // The camera's capability must be stored before it can ring.
    for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
    c.check(/capability accepted/.test(cam.stderr()), 'the camera reported its capability (a door-bell)');

    // ---- the ring reaches every endpoint that may answer ------------------------------------------
    const t0 = Date.now();
    let rr = await ring(cam, 'ring 1');
    c.check(rr.session, `ring 1: the camera's ringReply names the ring's session (${JSON.stringify(rr)})`);
    const evs = [];
    for (const a of apps) evs.push(await ringing(a));
    c.check(evs.every((e) => e && e.sessionId && e.data.inviteToken && e.data.cameraId === camera &&
        e.data.target && e.data.target.productID === target.productID && e.data.target.deviceName === target.deviceName &&
        e.eventSeq === 1), `every endpoint rings with its session, inviteToken, cameraId and target (${JSON.stringify(evs)})`);
    c.check(new Set(evs.map((e) => e && e.sessionId)).size === 3 && new Set(evs.map((e) => e && e.data.inviteToken)).size === 3,
        'each endpoint has its own session and token');
    console.log(`ring to the three ringing events: ${Date.now() - t0} ms`);
    const [s1, s2, s3] = evs.map((e) => e.sessionId);
    const [k1, k2, k3] = evs.map((e) => e.data.inviteToken);

    // ---- a second ring while it rings joins it ----------------------------------------------------
    const rr2 = await ring(cam, 'ring 1 again');
    c.check(rr2.session === rr.session, `a second ring while it rings joins it: the same session (${JSON.stringify(rr2)})`);
    await sleep(500);
    await owner1.pull();
    c.check(owner1.events.filter((e) => e.data && e.data.state === 'ringing').length === 1, 'no second fan out');

    // ---- bad input: refused, nothing changed ------------------------------------------------------
    let r = await control(owner1, s1, 'accept', k2);
    c.check(r.status === 400 && r.body.data.path === '/command/params/args/inviteToken' && !r.body.data.accepted,
        `an accept with another session's inviteToken is refused (${JSON.stringify(r.body)})`);
    r = await owner1.command({ msgToken: token('x'), method: 'interaction.control', sessionId: s1, params: { operation: 'accept' } });
    c.check(r.status === 400 && !r.body.data.accepted, `an accept without args is refused (${JSON.stringify(r.body)})`);
    r = await control(owner1, s3, 'accept', k3);
    c.check(r.status === 404 && !r.body.data.accepted, `an accept of another user's session is refused as unknown (${JSON.stringify(r.body)})`);
    r = await owner1.command({ msgToken: token('x'), method: 'interaction.mediaOffer', sessionId: s1,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: 'v=0' } } });
    c.check(r.status === 409 && !r.body.data.accepted, `a ringing session takes no mediaOffer (${JSON.stringify(r.body)})`);
    r = await owner1.command({ msgToken: token('x'), method: 'interaction.open', target, params: { purpose: 'doorbell', cameraId: camera } });
    c.check(r.status === 400 && r.body.data.path === '/command/params/purpose' && !r.body.data.accepted,
        `interaction.open cannot open a door-bell (${JSON.stringify(r.body)})`);
    c.check(sql(`SELECT state FROM rings WHERE ring_id = '${rr.session}'`) === 'ringing', 'the ring still rings');

    // ---- three accepts at once: exactly one wins --------------------------------------------------
    // A loser either is refused at once (its session ended before its
    // accept reached the engine: 409, not accepted) or accepted and failed
    // by the ring's row (a 409 result): either way the reason says it.
    const acc = await Promise.all([control(owner1, s1, 'accept', k1), control(owner2, s2, 'accept', k2), control(other, s3, 'accept', k3)]);
    const lost = (x, res) => (x.status === 409 && !x.body.data.accepted && /answered ?elsewhere/i.test(x.body.data.reason)) ||
        (x.status === 200 && x.body.data.accepted && res && res.code === 100409 && /answered ?elsewhere/i.test(res.data.reason));
    const results = await Promise.all(acc.map((x, i) => (x.status === 200 ? apps[i].result(x.t) : null)));
    const winners = results.map((x, i) => (x && x.code === 200 ? i : -1)).filter((i) => i >= 0);
    c.check(winners.length === 1, `exactly one accept wins (${JSON.stringify(acc.map((x) => x.body))} ${JSON.stringify(results)})`);
    const w = winners[0];
    const wa = apps[w], ws = evs[w].sessionId;
    c.check(results[w].data.state === 'invited' && results[w].data.sessionId === ws && results[w].data.result &&
        results[w].data.result.ringId === rr.session, `the winner's result says invited (${JSON.stringify(results[w])})`);
    for (const i of [0, 1, 2].filter((i) => i !== w))
        c.check(lost(acc[i], results[i]), `a losing accept: 409, answered elsewhere (${JSON.stringify(acc[i].body)} ${JSON.stringify(results[i])})`);
    const losers = [0, 1, 2].filter((i) => i !== w);
    for (const i of losers) {
        const ended = await endedOf(apps[i], evs[i].sessionId, 600);
        c.check(ended.length === 1 && ended[0].data.reason === 'answeredElsewhere',
            `loser ${i}: exactly one ended, answeredElsewhere (${JSON.stringify(ended)})`);
    }
    c.check(sql(`SELECT state || ',' || controller FROM rings WHERE ring_id = '${rr.session}'`) === `established,${ws}`,
        'the ring\'s row: established, the winner controls it');

    // ---- a late accept: a failure, nothing changed --------------------------------------------------
    const li = losers[0];
    r = await control(apps[li], evs[li].sessionId, 'accept', evs[li].data.inviteToken);
    c.check(r.status === 409 && /answeredElsewhere/.test(r.body.data.reason) && !r.body.data.accepted,
        `a late accept fails: answered elsewhere (${JSON.stringify(r.body)})`);
    // The same accept again (its token): the original outcome, no new winner.
    const again = await wa.command({ msgToken: acc[w].t, method: 'interaction.control', sessionId: ws,
        params: { operation: 'accept', args: { inviteToken: evs[w].data.inviteToken } } });
    c.check(again.status === 200 && again.body.data.replay === true, `the winner's accept replayed (${JSON.stringify(again.body)})`);
    c.check(sql(`SELECT controller FROM rings WHERE ring_id = '${rr.session}'`) === ws, 'the winner is unchanged');

    // ---- the winner's two-way call ------------------------------------------------------------------
    const browser = await launch({ args: AUTOPLAY_ARGS });
    const v = await newViewer(browser);
    const offer = await v.offerPublish(440);
    const to = token('offer');
    await accepted(c, wa, { msgToken: to, method: 'interaction.mediaOffer', sessionId: ws,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } }, 'winner: mediaOffer');
    const tAccept = Date.now();
    const ans = await wa.result(to, 15000);
    c.check(ans && ans.code === 200 && ans.data.webrtc, `winner: answered (${JSON.stringify(ans && ans.data && ans.data.reason)})`);
    const audio = ans.data.webrtc.sdp.split(/\r?\nm=/).find((m) => m.startsWith('audio')) || '';
    c.check(/a=sendrecv/.test(audio), 'winner: the answer\'s audio is two-way (sendrecv)');
    await v.setAnswer(ans.data.webrtc.sdp);
    const st = await v.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0 && st.audioPackets > 0,
        `winner: sees the camera and hears its microphone (${JSON.stringify(st)})`);
    console.log(`winner: offer to first frame ${Date.now() - tAccept} ms`);
    c.check(await loudWithin(10000), `winner: heard at the camera's speaker (${JSON.stringify(levels(Date.now() - 300).map((x) => x.rms_db))})`);
    await accepted(c, wa, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: ws,
        params: { mediaRevision: 1, state: 'connected' } }, 'winner: mediaState connected');
    const est = await wa.state(ws, 'established');
    c.check(est, 'winner: established');

    // ---- handover: the call moves to another user's endpoint, the camera never stops ----------------
    // The target: the granted user's endpoint, or the owner's other one when the granted user won.
    const target2 = w === 2 ? owner1 : other;
    const hargs = w === 2 ? { endpointId: owner1.ep, userId: String(DEMO.user.userId) } : { userId: String(DEMO.otherUser.userId) };
    r = await wa.command({ msgToken: token('h'), method: 'interaction.control', sessionId: ws,
        params: { operation: 'handover', args: { endpointId: wa.ep } } });
    c.check(r.status === 400 && !r.body.data.accepted, `a handover to its own endpoint is refused (${JSON.stringify(r.body)})`);
    // A user without rights on the camera: nobody rings, a failure result, nothing changed.
    const third = await app(DEMO.thirdUser);
    const tn = token('h');
    await accepted(c, wa, { msgToken: tn, method: 'interaction.control', sessionId: ws,
        params: { operation: 'handover', args: { userId: String(DEMO.thirdUser.userId) } } }, 'handover to a user without rights');
    const tnr = await wa.result(tn);
    c.check(tnr && tnr.code === 100404, `a handover to a user without rights fails (${JSON.stringify(tnr)})`);
    c.check(!(await third.wait((e) => e.data && e.data.state === 'ringing', 300)), 'a user without rights never rings');
    const hoFrom = cam.stderr().length;
    const levelFrom = Date.now();
    await target2.pull();
    const tmark = target2.events.length;
    const th = token('handover');
    await accepted(c, wa, { msgToken: th, method: 'interaction.control', sessionId: ws, params: { operation: 'handover', args: hargs } },
        'handover');
    const hres = await wa.result(th);
    c.check(hres && hres.code === 200 && hres.data.result && hres.data.result.operation === 'handover',
        `the handover's result (${JSON.stringify(hres)})`);
    const hring = await ringing(target2, 5000, tmark);
    c.check(hring && hring.data.inviteToken && hring.sessionId !== ws, `the target rings with a session of its own (${JSON.stringify(hring)})`);
    const ta = await control(target2, hring.sessionId, 'accept', hring.data.inviteToken);
    const tres = await target2.result(ta.t);
    c.check(tres && tres.code === 200 && tres.data.state === 'invited', `the target accepts (${JSON.stringify(tres)})`);
    r = await wa.command({ msgToken: token('x'), method: 'interaction.mediaState', sessionId: ws, params: { mediaRevision: 1, state: 'connected' } });
    c.check(r.status === 200, 'the old controller keeps its call until the target is established');
    const v2 = await newViewer(browser);
    const offer2 = await v2.offerPublish(660);
    const to2 = token('offer');
    await accepted(c, target2, { msgToken: to2, method: 'interaction.mediaOffer', sessionId: hring.sessionId,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer2 } } }, 'target: mediaOffer');
    const ans2 = await target2.result(to2, 15000);
    c.check(ans2 && ans2.code === 200 && ans2.data.webrtc, 'target: answered');
    await v2.setAnswer(ans2.data.webrtc.sdp);
    const st2 = await v2.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0, 15000).catch((e) => e.stats);
    c.check(st2 && st2.framesDecoded > 0, `target: sees the camera (${JSON.stringify(st2)})`);
    await accepted(c, target2, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: hring.sessionId,
        params: { mediaRevision: 1, state: 'connected' } }, 'target: mediaState connected');
    c.check(await target2.state(hring.sessionId, 'established'), 'target: established');
    const oldEnded = await endedOf(wa, ws, 1500);
    c.check(oldEnded.length === 1 && oldEnded[0].data.reason === 'handedOver',
        `the old controller: exactly one ended, handedOver (${JSON.stringify(oldEnded)})`);
    r = await wa.command({ msgToken: token('x'), method: 'interaction.control', sessionId: ws, params: { operation: 'handover', args: hargs } });
    c.check(r.status === 409 && /handedOver/.test(r.body.data.reason) && !r.body.data.accepted,
        `the old session controls nothing any more (${JSON.stringify(r.body)})`);
    c.check(sql(`SELECT state || ',' || controller FROM rings WHERE ring_id = '${rr.session}'`) === `established,${hring.sessionId}`,
        'the anchor stays established, the target controls it');
    c.check(!/bye/.test(cam.stderr().slice(hoFrom)), 'the camera got no bye during the handover');
    // The camera's speaker heard the call throughout: no gap in its level lines.
    const lv = levels(levelFrom);
    let gap = 0;
    for (let i = 1; i < lv.length; i++) gap = Math.max(gap, lv[i].at_ms - lv[i - 1].at_ms);
    c.check(lv.length > 10 && gap < 1000, `the camera's audio level is continuous through the handover (${lv.length} lines, largest gap ${gap} ms)`);
    await v.close().catch(() => {});

    // ---- the controller hangs up: the ring ends, the camera gets its bye --------------------------------
    const byeFrom = cam.stderr().length;
    await accepted(c, target2, { msgToken: token('end'), method: 'interaction.end', sessionId: hring.sessionId,
        params: { reason: 'userHangup' } }, 'controller: end');
    const end = await target2.state(hring.sessionId, 'ended');
    c.check(end && end.data.reason === 'userHangup', `controller: ended userHangup (${JSON.stringify(end)})`);
    for (let i = 0; i < 50 && !/bye/.test(cam.stderr().slice(byeFrom)); i++) await sleep(100);
    c.check(/bye/.test(cam.stderr().slice(byeFrom)), 'the camera got its bye');
    for (let i = 0; i < 50 && sql(`SELECT state FROM rings WHERE ring_id = '${rr.session}'`) !== 'ended'; i++) await sleep(100);
    c.check(sql(`SELECT state || ',' || reason FROM rings WHERE ring_id = '${rr.session}'`) === 'ended,userHangup',
        'the ring\'s row: ended with its controller\'s reason');
    await v2.close().catch(() => {});

    // ---- everybody declines: the ring ends declined --------------------------------------------------
    for (const a of apps) await a.pull();
    const marks = apps.map((a) => a.events.length);
    rr = await ring(cam, 'ring 2');
    c.check(rr.session, `ring 2 (${JSON.stringify(rr)})`);
    const evs2 = [];
    for (let i = 0; i < 3; i++) evs2.push(await ringing(apps[i], 5000, marks[i]));
    c.check(evs2.every((e) => e), 'ring 2 rings every endpoint');
    for (let i = 0; i < 3; i++) {
        const d = await control(apps[i], evs2[i].sessionId, 'decline', evs2[i].data.inviteToken);
        c.check(d.status === 200 && d.body.data.accepted, `decline ${i} accepted (${JSON.stringify(d.body)})`);
        const res = await apps[i].result(d.t);
        c.check(res && res.code === 200 && res.data.state === 'ended', `decline ${i}: its result (${JSON.stringify(res)})`);
        const e = await apps[i].state(evs2[i].sessionId, 'ended');
        c.check(e && e.data.reason === 'declined', `decline ${i}: its session ended declined`);
        if (i < 2)
            c.check(sql(`SELECT state FROM rings WHERE ring_id = '${rr.session}'`) === 'ringing', `after ${i + 1} decline(s) it still rings`);
    }
    for (let i = 0; i < 50 && sql(`SELECT state FROM rings WHERE ring_id = '${rr.session}'`) !== 'ended'; i++) await sleep(100);
    c.check(sql(`SELECT state || ',' || reason FROM rings WHERE ring_id = '${rr.session}'`) === 'ended,declined',
        'every endpoint declined: the ring ended declined');

    // ---- nobody answers: noAnswer after doorbell_ring_timeout_ms (4 s here) ---------------------------
    for (const a of apps) await a.pull();
    const marks3 = apps.map((a) => a.events.length);
    rr = await ring(cam, 'ring 3');
    const t3 = Date.now();
    const evs3 = [];
    for (let i = 0; i < 3; i++) evs3.push(await ringing(apps[i], 5000, marks3[i]));
    for (let i = 0; i < 3; i++) {
        const e = await apps[i].state(evs3[i].sessionId, 'ended', 8000);
        c.check(e && e.data.reason === 'noAnswer', `no answer: endpoint ${i} ended noAnswer (${JSON.stringify(e)})`);
    }
    const took = Date.now() - t3;
    c.check(took >= 3000 && took < 7000, `no answer: after the ring timeout (${took} ms)`);
    c.check(sql(`SELECT state || ',' || reason FROM rings WHERE ring_id = '${rr.session}'`) === 'ended,noAnswer',
        'the ring ended noAnswer');

    // ---- refusals of the device: an unknown camera; a camera without a door-bell ---------------------
    const send = (type, body) => deviceSend(`media/${type}`, body);
    r = await send('doorbell', { method: 'ring', msgToken: token('ring'), params: { cameraId: 'no-such-camera' } });
    c.check(r.body.code === 100404 && /lists no such camera/.test(r.body.msg + JSON.stringify(r.body.data)),
        `a ring of a camera the capability does not list: 404 (${JSON.stringify(r.body)})`);
    r = await send('doorbell', { method: 'ring', msgToken: token('ring'), sessionId: 'x', params: { cameraId: camera } });
    c.check(r.body.code === 100400, `a ring naming a session is refused by the decoder (${JSON.stringify(r.body)})`);
    r = await send('capability', { method: 'report', msgToken: token('cap'), params: { cameras: [{ cameraId: camera, video: ['H264'], audio: ['opus'] }],
        microphone: true, speaker: true, maxUpstreams: 1, confirmPolicy: 'auto' } });
    c.check(r.body.code === 200, `a capability report without a door-bell (${JSON.stringify(r.body)})`);
    const before = sql('SELECT count(*) FROM rings');
    r = await send('doorbell', { method: 'ring', msgToken: token('ring'), params: { cameraId: camera } });
    c.check(r.body.code === 100400 && /doorbell/.test(JSON.stringify(r.body)),
        `a camera whose capability has no door-bell cannot ring: 400 (${JSON.stringify(r.body)})`);
    c.check(sql('SELECT count(*) FROM rings') === before, 'a refused ring makes no ring');
    // The camera's own report again: it rings again.
    r = await send('capability', { method: 'report', msgToken: token('cap'), params: { cameras: [{ cameraId: camera, video: ['H264'], audio: ['opus'] }],
        microphone: true, speaker: true, maxUpstreams: 1, confirmPolicy: 'auto', doorbell: true } });
    c.check(r.body.code === 200, 'the door-bell reported again');

    // ---- the camera dies during an answered call: the call and the ring end with it ------------------
    for (const a of apps) await a.pull();
    const marks4 = apps.map((a) => a.events.length);
    rr = await ring(cam, 'ring 4');
    const e4 = await ringing(owner1, 5000, marks4[0]);
    const a4 = await control(owner1, e4.sessionId, 'accept', e4.data.inviteToken);
    const r4 = await owner1.result(a4.t);
    c.check(r4 && r4.code === 200, `ring 4 answered (${JSON.stringify(r4)})`);
    await sleep(500); // the camera's leg up
    cam.kill('SIGKILL');
    const gone = await owner1.state(e4.sessionId, 'ended', 10000);
    c.check(gone && (gone.data.reason === 'cameraOffline' || gone.data.reason === 'cameraGone'),
        `the camera killed during the call: the call ends with it (${JSON.stringify(gone)})`);
    for (let i = 0; i < 50 && sql(`SELECT state FROM rings WHERE ring_id = '${rr.session}'`) !== 'ended'; i++) await sleep(100);
    c.check(/^ended,camera(Offline|Gone)$/.test(sql(`SELECT state || ',' || reason FROM rings WHERE ring_id = '${rr.session}'`)),
        'the ring ended with its camera');

    await browser.close();
    await sleep(300);
    c.done('doorbell');
}

main().catch((e) => { console.error(e); process.exit(1); });
