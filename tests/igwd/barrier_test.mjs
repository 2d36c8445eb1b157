// barrier_test.mjs - a failed media barrier ends that viewer only (issue 26,
// item 3; the spec's track subscription state): with igwd's media core
// failing every track change (media_fault_barrier, set by live_test.sh),
// viewer 1's trackControl pause gets no success, its session ends
// `mediaFailed` and its media stops; viewer 2 of the same camera leg goes
// on decoding frames.
//
// env: live_lib.mjs's.
import { launch, sleep, Checker } from '../media/lib.mjs';
import { DEMO, app, accepted, startCamera, openLiveView } from './live_lib.mjs';

const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const frames = async (s) => (await s.v.stats()).framesDecoded;

async function establishedView(a, browser, name) {
    const s = await openLiveView(c, a, browser, name, token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `${name}: frames decoded (${JSON.stringify(st)})`);
    await accepted(c, a, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: s.sid,
        params: { mediaRevision: 1, state: 'connected' } }, `${name}: mediaState connected`);
    c.check(!!(await a.state(s.sid, 'established')), `${name}: established`);
    return s;
}

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const browser = await launch();
    const a1 = await app(DEMO.user);
    const a2 = await app(DEMO.otherUser);
    const s1 = await establishedView(a1, browser, 'viewer 1');
    const s2 = await establishedView(a2, browser, 'viewer 2');

    const t = token('pause');
    await accepted(c, a1, { msgToken: t, method: 'interaction.trackControl', sessionId: s1.sid,
        params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } }, 'viewer 1: pause');
    const res = await a1.result(t);
    c.check(res && res.code === 100500 && !res.data.state && /session ends/.test(res.data.reason),
        `viewer 1: no success, the failure said (${JSON.stringify(res)})`);
    const end = await a1.state(s1.sid, 'ended', 5000);
    c.check(end && end.data.reason === 'mediaFailed', `viewer 1: its session ends mediaFailed (${JSON.stringify(end)})`);
    await sleep(500);
    const f1 = await frames(s1);
    const g1 = await frames(s2);
    await sleep(1500);
    const f2 = await frames(s1);
    const g2 = await frames(s2);
    c.check(f2 - f1 <= 2, `viewer 1: its media released, frames stop (${f1} -> ${f2})`);
    c.check(g2 > g1 + 10, `viewer 2: unaffected, frames go on (${g1} -> ${g2})`);
    c.check(!a2.events.some((e) => e.method === 'interaction.state' && e.sessionId === s2.sid && e.data.state === 'ended'),
        'viewer 2: not ended');
    await accepted(c, a2, { msgToken: token('end'), method: 'interaction.end', sessionId: s2.sid, params: { reason: 'userHangup' } },
        'viewer 2: end');
    await browser.close();
    cam.kill('SIGTERM');
    await cam.waitExit(10000).catch(() => cam.kill('SIGKILL')); // the next test's camera takes its client id
    c.done('barrier');
}

main().catch((e) => { console.error(e); process.exit(1); });
