// cluster_test.mjs - three igwd nodes behind HAProxy as one service (issue
// 28, docs/scaling.md): every request goes to the balancer (IGW_BASE), whose
// round robin spreads a live view's commands over the nodes.
//
//   1. a Chromium live view opened, established, paused (no frame for
//      1.5 s), resumed, ended; each result as the session's owner gave it
//   2. a live view opened; its owner node killed (SIGKILL, its pid from
//      IGW_NODE_PIDS); the session ends nodeLost (the survivors' sweep); a
//      new live view through the balancer decodes frames
//
// Prints "KILLED <node>", "LOST_MS <kill to nodeLost event>", "FAILOVER_MS
// <kill to the new view's first frame>". Run by cluster_test.sh inside a
// network namespace.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, IGW_PG_DSN,
// IGW_NODE_PIDS ("node=pid ..."), IGW_LAPSE_MS.
import { execFileSync } from 'node:child_process';
import { launch, sleep, Checker } from '../media/lib.mjs';
import { DEMO, app, accepted, startCamera, openLiveView } from './live_lib.mjs';

const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const psql = (sql) => execFileSync('psql', ['-XAtq', '-d', process.env.IGW_PG_DSN, '-c', sql], { encoding: 'utf8' }).trim();
const frames = async (s) => (await s.v.stats()).framesDecoded;
const lapse = Number(process.env.IGW_LAPSE_MS);

async function growth(s, ms) {
    const f0 = await frames(s);
    await sleep(ms);
    return (await frames(s)) - f0;
}

/** The application, its pulls surviving a node's death: a request the
 * balancer had sent to the killed node fails once (502), the next goes to
 * a live one. */
async function clusterApp() {
    const a = await app(DEMO.user);
    const pull = a.pull;
    a.pull = () => pull().catch(() => sleep(200));
    const command = a.command;
    a.command = async (cmd) => {
        for (let i = 0; ; i++) {
            try {
                const r = await command(cmd);
                if (r.status !== 502 && r.status !== 503 || i >= 20) return r;
            } catch (e) {
                if (i >= 20) throw e;
            }
            await sleep(200); // the same msgToken: a replay if it was accepted
        }
    };
    return a;
}

async function flow(browser) {
    const a = await clusterApp();
    const s = await openLiveView(c, a, browser, 'live view via the balancer', token);
    let st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `frames decoded (${JSON.stringify(st)})`);
    let t = token('state');
    await accepted(c, a, { msgToken: t, method: 'interaction.mediaState', sessionId: s.sid,
        params: { mediaRevision: 1, state: 'connected' } }, 'mediaState');
    c.check(!!(await a.state(s.sid, 'established')), 'established');
    t = token('pause');
    await accepted(c, a, { msgToken: t, method: 'interaction.trackControl', sessionId: s.sid,
        params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } }, 'pause');
    let r = await a.result(t);
    c.check(r && r.code === 200, `pause: result (${JSON.stringify(r)})`);
    await sleep(1000);
    const paused = await growth(s, 1500);
    c.check(paused === 0, `paused: no frame decoded in 1.5 s (${paused})`);
    t = token('resume');
    await accepted(c, a, { msgToken: t, method: 'interaction.trackControl', sessionId: s.sid,
        params: { trackId: 'video-1', operation: 'resume', mediaRevision: 1 } }, 'resume');
    r = await a.result(t);
    c.check(r && r.code === 200, `resume: result (${JSON.stringify(r)})`);
    await s.v.waitFor((x) => x.framesDecoded > paused, 10000).catch(() => null);
    const resumed = await growth(s, 1500);
    c.check(resumed > 0, `resumed: frames again (${resumed} in 1.5 s)`);
    t = token('end');
    await accepted(c, a, { msgToken: t, method: 'interaction.end', sessionId: s.sid, params: { reason: 'userHangup' } },
        'end');
    r = await a.result(t);
    c.check(r && r.code === 200, `end: result (${JSON.stringify(r)})`);
    const e = await a.state(s.sid, 'ended');
    c.check(e && e.data.reason === 'userHangup', `ended userHangup (${JSON.stringify(e)})`);
    await s.v.close();
}

async function kill(browser) {
    const pids = Object.fromEntries(process.env.IGW_NODE_PIDS.trim().split(/\s+/).map((x) => x.split('=')));
    const a = await clusterApp();
    const s = await openLiveView(c, a, browser, 'live view to lose', token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `frames decoded (${JSON.stringify(st)})`);
    const owner = psql(`SELECT owner_node FROM sessions WHERE session_id = '${s.sid}'`);
    c.check(!!pids[owner], `its owner is one of the nodes (${owner})`);
    const t0 = Date.now();
    process.kill(Number(pids[owner]), 'SIGKILL');
    console.log(`KILLED ${owner}`);
    const e = await a.state(s.sid, 'ended', lapse + 15000);
    const lost = Date.now() - t0;
    c.check(e && e.data.reason === 'nodeLost', `the killed node's session ended nodeLost (${JSON.stringify(e)})`);
    // the survivors' sweep runs each heartbeat: the lapse, a heartbeat, the
    // event's way (a pull every 100 ms); the sanitized build's slowness
    c.check(lost <= lapse + 3000, `nodeLost within the lapse (${lost} ms, lapse ${lapse} ms)`);
    console.log(`LOST_MS ${lost}`);
    await s.v.close();
    const s2 = await openLiveView(c, a, browser, 'new live view after the kill', token);
    const st2 = await s2.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((x) => x.stats);
    const failover = Date.now() - t0;
    c.check(st2 && st2.framesDecoded > 0, `the new view decodes frames (${JSON.stringify(st2)})`);
    const owner2 = psql(`SELECT owner_node FROM sessions WHERE session_id = '${s2.sid}'`);
    c.check(owner2 !== owner && !!pids[owner2], `the new view is a survivor's (${owner2})`);
    console.log(`FAILOVER_MS ${failover}`);
    const t = token('end');
    await accepted(c, a, { msgToken: t, method: 'interaction.end', sessionId: s2.sid, params: { reason: 'userHangup' } },
        'the new view: end');
    c.check(!!(await a.state(s2.sid, 'ended')), 'the new view: ended');
    await s2.v.close();
}

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const browser = await launch();
    try {
        await flow(browser);
        await kill(browser);
    } finally {
        await browser.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited;
    }
    c.done('cluster test');
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
