// forward_test.mjs - session commands on a node that does not hold the
// session (issue 28, docs/decisions.md "Several nodes: the channel to the
// owner"): the live view is opened on node A (IGW_BASE), which invites the
// camera and owns the session; every later command goes to node B
// (IGW_BASE_B), which accepts it and hands it to A through PostgreSQL: the
// offer, mediaState, pause and resume, a subscribe (a second viewing of
// A's camera leg) and its offer, end.
// What A answers comes back as events, refusals included. Both nodes are on
// the broker, whose shared subscription hands each camera message to
// either: those on A's leg that reach B are handed to A, whose answer B
// replies (checked on B's HTTP send route, where the node is chosen). An
// open on B of the camera whose shared leg A holds goes to A: one leg.
// Run by forward_test.sh inside a network namespace, with both nodes up.
//
// env: IGW_BASE, IGW_BASE_B, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, IGW_PG_DSN.
import { execFileSync } from 'node:child_process';
import { launch, newViewer, sleep, Checker } from '../media/lib.mjs';
import { DEMO, app, call, accepted, deviceSend, startCamera, openLiveView } from './live_lib.mjs';

const A = process.env.IGW_BASE;
const B = process.env.IGW_BASE_B;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const COMMANDS = '/api/v1/im/interaction/commands';

const frames = async (s) => (await s.v.stats()).framesDecoded;
const psql = (sql) => execFileSync('psql', ['-XAtq', '-d', process.env.IGW_PG_DSN, '-c', sql], { encoding: 'utf8' }).trim();

/** Frames decoded over `ms`. */
async function growth(s, ms) {
    const f0 = await frames(s);
    await sleep(ms);
    return (await frames(s)) - f0;
}

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const a = await app(DEMO.user);
    // The open on A (its camera is A's), everything after on B.
    a.command = (command) => call(a.user, COMMANDS, { endpointId: a.ep, command },
        command.method === 'interaction.open' ? A : B);
    const browser = await launch();
    try {
        const s = await openLiveView(c, a, browser, 'via B', token); // its mediaOffer went to B
        let st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
        c.check(st && st.framesDecoded > 0, `the answer forwarded from A: frames decoded (${JSON.stringify(st)})`);

        let t = token('state');
        await accepted(c, a, { msgToken: t, method: 'interaction.mediaState', sessionId: s.sid,
            params: { mediaRevision: 1, state: 'connected' } }, 'mediaState on B');
        let r = await a.result(t);
        c.check(r && r.code === 200 && r.data.state === 'connected', `mediaState: A's result (${JSON.stringify(r)})`);
        c.check(!!(await a.state(s.sid, 'established')), 'established by the forwarded mediaState');

        const pause = { msgToken: token('pause'), method: 'interaction.trackControl', sessionId: s.sid,
            params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } };
        await accepted(c, a, pause, 'pause on B');
        r = await a.result(pause.msgToken);
        c.check(r && r.code === 200, `pause: A's result (${JSON.stringify(r)})`);
        await sleep(1000);
        const paused = await growth(s, 1500);
        c.check(paused === 0, `paused through B: no frame decoded in 1.5 s (${paused})`);

        t = token('resume');
        await accepted(c, a, { msgToken: t, method: 'interaction.trackControl', sessionId: s.sid,
            params: { trackId: 'video-1', operation: 'resume', mediaRevision: 1 } }, 'resume on B');
        r = await a.result(t);
        c.check(r && r.code === 200, `resume: A's result (${JSON.stringify(r)})`);
        st = await s.v.waitFor((x) => x.framesDecoded > paused, 10000).catch((e) => e.stats);
        const resumed = await growth(s, 1500);
        c.check(resumed > 0, `resumed through B: frames again (${resumed} in 1.5 s)`);

        // What the owner refuses after B accepted it: the result says so.
        t = token('stale');
        await accepted(c, a, { msgToken: t, method: 'interaction.trackControl', sessionId: s.sid,
            params: { trackId: 'video-1', operation: 'pause', mediaRevision: 7 } }, 'a stale mediaRevision on B');
        r = await a.result(t);
        c.check(r && r.code === 100409 && r.data.reason === 'stale mediaRevision' &&
            r.data.operation === 'interaction.trackControl',
            `stale mediaRevision: A's refusal as the result, 100409 (${JSON.stringify(r)})`);
        const more = await growth(s, 1000);
        c.check(more > 0, `the refused pause changed nothing: frames still (${more})`);

        // The replay of a forwarded command, on A this time: answered as a
        // replay, not run again.
        const before = a.events.filter((e) => e.method === 'interaction.result' && e.msgToken === pause.msgToken).length;
        const rp = await call(a.user, COMMANDS, { endpointId: a.ep, command: pause }, A);
        c.check(rp.status === 200 && rp.body.data.accepted === true, `the pause replayed on A: 200 (${JSON.stringify(rp.body)})`);
        const still = await growth(s, 1500);
        c.check(still > 0, `the replay paused nothing (${still} frames in 1.5 s)`);
        await a.pull();
        const after = a.events.filter((e) => e.method === 'interaction.result' && e.msgToken === pause.msgToken).length;
        c.check(after >= before, `the replay's result is the first one (${before} -> ${after})`);

        // subscribe on B: the new viewing is A's (it rides A's camera leg),
        // its mediaOffer on B too.
        const ts = token('sub');
        await accepted(c, a, { msgToken: ts, method: 'interaction.subscribe', sessionId: s.sid,
            params: { trackId: 'video-1' } }, 'subscribe on B');
        const sr = await a.result(ts);
        c.check(sr && sr.code === 200 && sr.data.state === 'invited' && sr.data.sessionId && sr.data.sessionId !== s.sid,
            `subscribe: A's new session (${JSON.stringify(sr)})`);
        const sub = { sid: sr && sr.data.sessionId, v: await newViewer(browser) };
        const so = await sub.v.offerRecvOnly();
        t = token('suboffer');
        await accepted(c, a, { msgToken: t, method: 'interaction.mediaOffer', sessionId: sub.sid,
            params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: so } } }, 'subscriber: mediaOffer on B');
        r = await a.result(t, 15000);
        c.check(r && r.code === 200 && r.data.webrtc, `subscriber: A's answer (${r && r.code})`);
        if (r && r.data.webrtc) await sub.v.setAnswer(r.data.webrtc.sdp);
        st = await sub.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
        c.check(st && st.framesDecoded > 0, `subscriber: frames decoded (${JSON.stringify(st)})`);
        t = token('subend');
        await accepted(c, a, { msgToken: t, method: 'interaction.end', sessionId: sub.sid, params: { reason: 'userStopped' } },
            'subscriber: end on B');
        const se = await a.state(sub.sid, 'ended');
        c.check(se && se.data.reason === 'userStopped', `subscriber: ended userStopped (${JSON.stringify(se)})`);
        await sub.v.close();

        // The camera's messages on A's leg reaching B: B hands them to A and
        // replies A's answer (unknown here, B would say 404).
        const legs = psql(`SELECT leg_id || ' ' || owner_node FROM legs`).split('\n');
        c.check(legs.length === 1 && / fwd-a$/.test(legs[0]), `one camera leg, A's (${legs})`);
        const leg = legs[0].split(' ')[0];
        let d = await deviceSend('media/session', { method: 'mediaOffer', msgToken: token('dup'), sessionId: leg,
            params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: 'v=0\r\n' } } }, B);
        c.check(d.status === 409 && d.body.code === 100409 && /already has the camera's offer/.test(d.body.data.reason),
            `a second offer on A's leg sent to B: A's refusal as B's reply (${JSON.stringify(d.body)})`);
        d = await deviceSend('media/session', { method: 'mediaState', msgToken: token('cst'), sessionId: leg,
            params: { mediaRevision: 1, state: 'connected' } }, B);
        c.check(d.status === 200 && d.body.code === 200, `the camera's mediaState sent to B: A's answer (${JSON.stringify(d.body)})`);
        d = await deviceSend('media/session', { method: 'mediaState', msgToken: token('cst'), sessionId: 'noSuchLeg',
            params: { mediaRevision: 1, state: 'connected' } }, B);
        c.check(d.body.code === 100404 && /unknown session/.test(d.body.data.reason),
            `a leg no node holds: B's own 404 (${JSON.stringify(d.body)})`);

        // A second viewer opened on B: A holds the camera's shared leg, so
        // the open goes there; the camera still has one leg.
        const b = await app(DEMO.user);
        b.command = (command) => call(b.user, COMMANDS, { endpointId: b.ep, command }, B);
        const s2 = await openLiveView(c, b, browser, 'second viewer on B', token);
        st = await s2.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
        c.check(st && st.framesDecoded > 0, `second viewer on B: frames decoded (${JSON.stringify(st)})`);
        const owners = psql(`SELECT owner_node FROM sessions WHERE session_id = '${s2.sid}'`);
        c.check(owners === 'fwd-a', `second viewer on B: its session is A's (${owners})`);
        const legs2 = psql(`SELECT count(*) FROM legs`);
        c.check(legs2 === '1', `two viewers on two nodes, one camera leg (${legs2})`);
        t = token('end2');
        await accepted(c, b, { msgToken: t, method: 'interaction.end', sessionId: s2.sid, params: { reason: 'userHangup' } },
            'second viewer: end on B');
        c.check(!!(await b.state(s2.sid, 'ended')), 'second viewer: ended');
        await s2.v.close();

        t = token('end');
        await accepted(c, a, { msgToken: t, method: 'interaction.end', sessionId: s.sid, params: { reason: 'userHangup' } },
            'end on B');
        r = await a.result(t);
        c.check(r && r.code === 200, `end: A's result (${JSON.stringify(r)})`);
        c.check(!!(await a.state(s.sid, 'ended')), 'ended by the forwarded end');

        // Ended: B answers itself from the row, nothing forwarded.
        const late = await a.command({ msgToken: token('late'), method: 'interaction.mediaState', sessionId: s.sid,
            params: { mediaRevision: 1, state: 'connected' } });
        c.check(late.status === 409 && late.body.data.path === '/command/sessionId',
            `after the end, B refuses at once: 409 (${JSON.stringify(late.body)})`);
        console.log(`SID ${s.sid}`);

        // No leg anywhere: an open on B is B's, and the camera's messages
        // on B's leg that reach A are handed to B.
        await sleep(500); // the ended leg's row goes with it
        const s3 = await openLiveView(c, b, browser, 'cold open on B', token);
        st = await s3.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
        c.check(st && st.framesDecoded > 0, `cold open on B: frames decoded (${JSON.stringify(st)})`);
        const legs3 = psql(`SELECT leg_id || ' ' || owner_node FROM legs`).split('\n');
        c.check(legs3.length === 1 && / fwd-b$/.test(legs3[0]), `cold open on B: its leg is B's (${legs3})`);
        d = await deviceSend('media/session', { method: 'mediaOffer', msgToken: token('dup'), sessionId: legs3[0].split(' ')[0],
            params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: 'v=0\r\n' } } }, A);
        c.check(d.status === 409 && d.body.code === 100409 && /already has the camera's offer/.test(d.body.data.reason),
            `a second offer on B's leg sent to A: B's refusal as A's reply (${JSON.stringify(d.body)})`);
        t = token('end3');
        await accepted(c, b, { msgToken: t, method: 'interaction.end', sessionId: s3.sid, params: { reason: 'userHangup' } },
            'cold open on B: end');
        c.check(!!(await b.state(s3.sid, 'ended')), 'cold open on B: ended');
        await s3.v.close();
        console.log(`SID3 ${s3.sid}`);
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited;
    }
    c.done('forward test');
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
