// bench_nodes.mjs - several igwd nodes as one service (issue 28): what a
// command costs on a node that does not hold its session, how long a live
// view is gone when its node dies, what is lost meanwhile, and commands per
// second over 1, 2 and 3 nodes. Run by bench_nodes.sh (three nodes, n1 n2
// n3, behind HAProxy, in namespaces of their own).
//
//   part 1, forwarded overhead: a live view opened on n1 (its owner, a
//     Chromium viewer); CMDS interaction.mediaState commands, alternately to
//     n1 and to n2 (which hands each to n1), each timed from its request to
//     its result pushed over the application's WebSocket (to n3); the
//     overhead is the forwarded p99 minus the owner's, same run
//   part 2, commands per second: CONC clients in closed loop (a command,
//     its pushed result, the next) over LOAD_SECONDS, spread by round robin
//     over the first 1, 2, 3 nodes: with 2 and 3, most commands are
//     forwarded to the owner
//   part 3, failover: under HTTP uplinks through the balancer, n1 (the live
//     view's node) is killed (SIGKILL); from the kill to a new live view
//     through the balancer decoding frames on a survivor, the client opening
//     once the session's nodeLost is pushed; then every acknowledged uplink
//     is looked up: lost = acknowledged and not stored
//
// env: IGW_BASE (n3: the application's WebSocket and acks), IGW_LB (the
// balancer), IGW_NODES ("n1=URL n2=URL n3=URL"), IGW_NODE_PIDS ("n1=pid"),
// IGW_DEMO, IGW_VCAM, IGW_NETNS_ADDR, IGW_PG_DSN, IGW_LAPSE_MS, WS_NODE_DIR, CMDS (1000), CONC (8),
// LOAD_SECONDS (5).
import { execFileSync } from 'node:child_process';
import { launch, newViewer, sleep, spawnLines } from '../media/lib.mjs';
import { DEMO, target, camera, token, app, pct, firstFrameAt } from './api.mjs';

const CMDS = Number(process.env.CMDS || 1000);
const CONC = Number(process.env.CONC || 8);
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS || 5);
const LAPSE = Number(process.env.IGW_LAPSE_MS);
const nodes = Object.fromEntries(process.env.IGW_NODES.trim().split(/\s+/).map((x) => x.split(/=(.*)/s).slice(0, 2)));
const pids = Object.fromEntries(process.env.IGW_NODE_PIDS.trim().split(/\s+/).map((x) => x.split('=')));
const LB = process.env.IGW_LB;
const psql = (sql) => execFileSync('psql', ['-XAtq', '-d', process.env.IGW_PG_DSN, '-c', sql], { encoding: 'utf8' }).trim();

async function callAt(base, path, body, auth = `Bearer ${DEMO.user.token}`) {
    const r = await fetch(base + path, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try {
        json = JSON.parse(text);
    } catch {
        json = { text };
    }
    return { status: r.status, body: json };
}

/** Sends command to base; throws unless accepted. */
async function acceptedAt(a, base, command) {
    const r = await callAt(base, '/api/v1/im/interaction/commands', { endpointId: a.ep, command });
    if (r.status !== 200 || !r.body.data || r.body.data.accepted !== true)
        throw new Error(`${command.method} at ${base}: ${r.status} ${JSON.stringify(r.body)}`);
}

const resultOf = (a, t, ms = 15000) =>
    a.wait((e) => e.method === 'interaction.result' && e.msgToken === t, ms, `result of ${t}`);

/** A live view opened through base, its viewer decoding: {sid, v, frameAt}. */
async function liveView(a, browser, base) {
    const t = token('open');
    await acceptedAt(a, base, { msgToken: t, method: 'interaction.open', target,
        params: { purpose: 'ipcLiveView', cameraId: camera } });
    const r = await resultOf(a, t);
    if (r.event.code !== 200) return { refused: r.event };
    const sid = r.event.data.sessionId;
    const v = await newViewer(browser);
    const offer = await v.offerRecvOnly();
    const to = token('offer');
    await acceptedAt(a, base, { msgToken: to, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: offer } } });
    const ans = await resultOf(a, to);
    if (ans.event.code !== 200) throw new Error(`mediaOffer: ${JSON.stringify(ans.event)}`);
    await v.setAnswer(ans.event.data.webrtc.sdp);
    const frameAt = await firstFrameAt(v, 15000);
    if (frameAt < 0) throw new Error('no frame decoded in 15 s');
    return { sid, v, frameAt };
}

/** One mediaState at base, from request to pushed result (ms). */
async function stateCmd(a, base, sid) {
    const t = token('st');
    const t0 = performance.now();
    await acceptedAt(a, base, { msgToken: t, method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } });
    const r = await resultOf(a, t);
    if (r.event.code !== 200) throw new Error(`mediaState: ${JSON.stringify(r.event)}`);
    return performance.now() - t0;
}

async function overhead(a, sid) {
    const own = [], fwd = [];
    for (let i = 0; i < 10; i++) await stateCmd(a, i % 2 ? nodes.n2 : nodes.n1, sid); // warm both paths
    for (let i = 0; i < CMDS; i++) {
        if (i % 2) fwd.push(await stateCmd(a, nodes.n2, sid));
        else own.push(await stateCmd(a, nodes.n1, sid));
    }
    own.sort((x, y) => x - y);
    fwd.sort((x, y) => x - y);
    const r = { own50: pct(own, 50), own99: pct(own, 99), fwd50: pct(fwd, 50), fwd99: pct(fwd, 99) };
    console.log(`part 1: ${CMDS} mediaState commands, request to pushed result: on the owner p50 ${r.own50.toFixed(1)} ` +
        `p99 ${r.own99.toFixed(1)} ms; on another node p50 ${r.fwd50.toFixed(1)} p99 ${r.fwd99.toFixed(1)} ms`);
    return r;
}

async function throughput(a, sid, k) {
    const bases = ['n1', 'n2', 'n3'].slice(0, k).map((n) => nodes[n]);
    let n = 0, rr = 0;
    const end = Date.now() + LOAD_SECONDS * 1000;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: CONC }, async () => {
        while (Date.now() < end) {
            await stateCmd(a, bases[rr++ % bases.length], sid);
            n++;
        }
    }));
    const rate = n / ((Date.now() - t0) / 1000);
    console.log(`part 2: ${k} node(s): ${n} commands in closed loop (${CONC} clients, each to its result): ${rate.toFixed(0)}/s`);
    return rate;
}

async function failover(a, browser, s) {
    const acked = [];
    let loading = true, i = 0;
    const load = (async () => {
        while (loading) {
            const t = `bn${process.pid}-${++i}`;
            try {
                const r = await callAt(LB, '/api/v1/things/device/edge/send/thing/property',
                    { method: 'report', msgToken: t, params: { brightness: i % 100 } }, DEMO.device.authorization);
                if (r.status === 200) acked.push(t);
            } catch {
                // refused or cut by the kill: not acknowledged
            }
            await sleep(20);
        }
    })();
    await sleep(1000);
    const t0 = Date.now();
    process.kill(Number(pids.n1), 'SIGKILL');
    const lost = await a.wait((e) => e.method === 'interaction.state' && e.sessionId === s.sid && e.data.state === 'ended',
        LAPSE + 15000, 'nodeLost');
    if (lost.event.data.reason !== 'nodeLost') throw new Error(`ended ${JSON.stringify(lost.event.data)}`);
    await s.v.close();
    let view;
    for (let tries = 0; !view || view.refused; tries++) {
        if (tries > 10) throw new Error(`no new live view: ${JSON.stringify(view)}`);
        view = await liveView(a, browser, LB);
    }
    const ms = view.frameAt - t0;
    const owner = psql(`SELECT owner_node FROM sessions WHERE session_id = '${view.sid}'`);
    console.log(`part 3: kill -9 of n1: nodeLost pushed after ${lost.at - t0} ms (lapse ${LAPSE} ms); ` +
        `a new view on ${owner} decoding after ${ms} ms`);
    await sleep(500);
    loading = false;
    await load;
    const list = acked.map((t) => `('${t}')`).join(',');
    const stored = Number(psql(`SELECT count(*) FROM (VALUES ${list}) v(t) WHERE EXISTS
        (SELECT 1 FROM device_messages m WHERE m.product_id = '${DEMO.device.productID}' AND m.msg_token = v.t)`));
    console.log(`part 3: ${acked.length} uplinks acknowledged through the balancer around the kill, ${stored} stored`);
    await view.v.close();
    return { ms, lost: acked.length - stored, owner };
}

async function main() {
    const cam = spawnLines(process.env.IGW_VCAM, ['--mqtt', `127.0.0.1:${DEMO.mqtt.port}`, '--product', target.productID,
        '--device', target.deviceName, '--secret', DEMO.device.secret, '--camera-id', camera,
        '--address', process.env.IGW_NETNS_ADDR], { prefix: '[vcam] ', quiet: true });
    const a = await app();
    const browser = await launch();
    try {
        const s = await liveView(a, browser, nodes.n1);
        if (!s.sid) throw new Error(`open refused: ${JSON.stringify(s.refused)}`);
        const ov = await overhead(a, s.sid);
        const rates = [];
        for (const k of [1, 2, 3]) rates.push(await throughput(a, s.sid, k));
        const f = await failover(a, browser, s);
        console.log(`RESULT forwarded_cmd_overhead_p99_ms=${(ov.fwd99 - ov.own99).toFixed(1)} owner_p99_ms=${ov.own99.toFixed(1)} ` +
            `forwarded_p99_ms=${ov.fwd99.toFixed(1)} failover_to_frame_ms=${f.ms} lapse_ms=${LAPSE} lost=${f.lost} ` +
            `cmds_per_s_1=${rates[0].toFixed(0)} cmds_per_s_2=${rates[1].toFixed(0)} cmds_per_s_3=${rates[2].toFixed(0)}`);
    } finally {
        await browser.close().catch(() => {});
        await a.close().catch(() => {});
        cam.kill('SIGTERM');
        await cam.exited;
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
