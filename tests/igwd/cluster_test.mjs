// cluster_test.mjs - three igwd nodes behind HAProxy as one service (issue
// 28, docs/scaling.md): every request goes to the balancer (IGW_BASE), whose
// round robin spreads a live view's commands over the nodes.
//
//   1. a Chromium live view opened, established, paused (no frame for
//      1.5 s), resumed, ended; each result as the session's owner gave it;
//      a recording the camera made played, paused and ended (the camera's
//      replies to the leg's node whichever node the broker gives them to);
//      a talk of the demo group's call: the member's tone on the camera's
//      speaker, a second member joined
//   2. a live view opened; its owner node killed (SIGKILL, its pid from
//      IGW_NODE_PIDS); the session ends nodeLost (the survivors' sweep); a
//      new live view through the balancer decodes frames. Beside it a
//      second application whose WebSocket is on the doomed node (its
//      session rides the same camera leg, so it is that node's too): cut by
//      the kill, it reconnects through the balancer and misses no event of
//      its session (each eventSeq once, up to ended nodeLost)
//
// Prints "KILLED <node>", "LOST_MS <kill to nodeLost event>", "FAILOVER_MS
// <kill to the new view's first frame>". Run by cluster_test.sh inside a
// network namespace.
//
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_NETNS_ADDR, IGW_PG_DSN,
// IGW_NODE_PIDS ("node=pid ..."), IGW_NODE_URLS ("node=URL ..."),
// IGW_LAPSE_MS, WS_NODE_DIR, IGW_REC_DIR (the camera's recordings),
// IGW_SPEAKER_LOG (its speaker's levels).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { launch, newViewer, sleep, Checker, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, app, call, accepted, startCamera, openLiveView, target, camera, speakerLevels } from './live_lib.mjs';

const WebSocket = createRequire(process.env.WS_NODE_DIR + '/package.json')('ws');

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
    // Its leg lingers (leg_linger_ms 3000): an open now, through any node,
    // joins it warm; the camera is not invited again.
    const leg = psql('SELECT leg_id FROM legs WHERE shared');
    c.check(/^[A-Za-z0-9_-]+$/.test(leg), `the leg lingers without viewers (${leg})`);
    const s2 = await openLiveView(c, a, browser, 'live view within the linger', token);
    const st2 = await s2.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((x) => x.stats);
    c.check(st2 && st2.framesDecoded > 0, `within the linger: frames decoded (${JSON.stringify(st2)})`);
    const legs = psql('SELECT string_agg(leg_id, \',\') FROM legs WHERE shared');
    c.check(legs === leg, `within the linger: the same leg, no new invite (${leg} -> ${legs})`);
    await accepted(c, a, { msgToken: token('end'), method: 'interaction.end', sessionId: s2.sid, params: { reason: 'userHangup' } },
        'within the linger: end');
    c.check(!!(await a.state(s2.sid, 'ended')), 'within the linger: ended');
    await s2.v.close();
    let left = '1';
    for (let i = 0; i < 80 && left !== '0'; i++) (left = psql('SELECT count(*) FROM legs')) === '0' || (await sleep(100));
    c.check(left === '0', `the linger passed with nobody: the leg ended (${left} left)`);
}

/** An application whose events come over the WebSocket of the node at
 * url, reconnecting through the balancer when it is cut; every frame's
 * event kept once (by deliveryId) and acknowledged. */
async function wsApp(url) {
    const r = await call(DEMO.user, '/api/v1/im/interaction/endpoints/register');
    if (r.status !== 200) throw new Error(`register: ${JSON.stringify(r.body)}`);
    const w = { ep: r.body.data.endpointId, events: [], seen: new Set(), cuts: 0, open: false };
    const connect = (base) => new Promise((resolve) => {
        const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/v1/im/interaction/events/ws/${w.ep}`,
            { headers: { authorization: `Bearer ${DEMO.user.token}` } });
        ws.on('open', () => ((w.open = true), resolve(true)));
        ws.on('error', () => resolve(false));
        ws.on('message', (data) => {
            const f = JSON.parse(data.toString());
            if (f.method !== 'interaction.event' || w.seen.has(f.deliveryId)) return;
            w.seen.add(f.deliveryId);
            w.events.push(f.event);
            call(DEMO.user, '/api/v1/im/interaction/events/ack', { endpointId: w.ep, deliveryIds: [f.deliveryId] })
                .catch(() => {}); // unacknowledged: pushed again, kept once
        });
        ws.on('close', async () => {
            if (!w.open || w.closing) return;
            w.open = false;
            w.cuts++;
            while (!w.closing && !(await connect(process.env.IGW_BASE))) await sleep(200);
        });
        w.ws = ws;
    });
    if (!(await connect(url))) throw new Error(`WebSocket to ${url} refused`);
    w.wait = async (pred, ms) => {
        const end = Date.now() + ms;
        for (;;) {
            const e = w.events.find(pred);
            if (e || Date.now() > end) return e || null;
            await sleep(50);
        }
    };
    w.close = () => ((w.closing = true), w.ws.close());
    return w;
}

/** A state event of sid with data.playback. */
const pbEvent = (a, sid, playback, ms = 15000) =>
    a.wait((e) => e.method === 'interaction.state' && e.sessionId === sid && e.data.playback === playback, ms);

async function command(a, params, what, sid) {
    const t = token('c');
    await accepted(c, a, { msgToken: t, ...(sid ? { sessionId: sid } : {}), ...params }, what);
    const r = await a.result(t, 15000);
    c.check(r && r.code === 200, `${what}: result (${JSON.stringify(r)})`);
    return r ? r.data : {};
}

async function playback(browser) {
    const a = await clusterApp();
    let list = [];
    for (let i = 0; i < 200 && list.length < 1; i++) {
        const r = await call(DEMO.user, '/api/v1/im/interaction/recordings/query',
            { endpointId: a.ep, target, cameraId: camera, startTimeMs: Date.now() - 600000, endTimeMs: Date.now() + 60000, limit: 8 })
            .catch(() => ({ status: 0 }));
        if (r.status === 200) list = r.body.data.list.filter((x) => x.available && x.durationMs >= 2000);
        if (!list.length) await sleep(250);
    }
    c.check(list.length >= 1, `playback: the camera's segments in the catalog (${list.length})`);
    const d0 = await command(a, { method: 'interaction.open', target,
        params: { purpose: 'recordPlayback', cameraId: camera, recordingId: list[0].recordingId } }, 'playback: open');
    const sid = d0.sessionId;
    const v = await newViewer(browser);
    await command(a, { method: 'interaction.mediaOffer',
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: await v.offerRecvOnly() } } }, 'playback: mediaOffer', sid)
        .then((d) => d.webrtc && v.setAnswer(d.webrtc.sdp));
    await v.waitFor((x) => x.connectionState === 'connected', 15000).catch(() => {});
    await command(a, { method: 'interaction.mediaState', params: { mediaRevision: 1, state: 'connected' } },
        'playback: mediaState', sid);
    const ready = await pbEvent(a, sid, 'ready');
    c.check(ready && ready.data.state === 'established', `playback: ready (${JSON.stringify(ready)})`);
    let d = await command(a, { method: 'interaction.playbackControl', params: { operation: 'play', mediaRevision: 1 } },
        'playback: play', sid);
    c.check(d.state === 'playing', `playback: the camera says playing (${JSON.stringify(d)})`);
    const st = await v.waitFor((x) => x.framesDecoded > 0, 8000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `playback: frames decoded (${JSON.stringify(st)})`);
    d = await command(a, { method: 'interaction.playbackControl', params: { operation: 'pause', mediaRevision: 1 } },
        'playback: pause', sid);
    c.check(d.state === 'paused', `playback: the camera says paused (${JSON.stringify(d)})`);
    await sleep(400);
    const f1 = (await v.stats()).framesDecoded;
    await sleep(1200);
    const f2 = (await v.stats()).framesDecoded;
    c.check(f2 === f1, `playback: no frame while paused (${f1} -> ${f2})`);
    await command(a, { method: 'interaction.end', params: { reason: 'userHangup' } }, 'playback: end', sid);
    const e = await a.state(sid, 'ended');
    c.check(e && e.data.reason === 'userHangup', `playback: ended (${JSON.stringify(e)})`);
    await v.close();
}

const loudNow = () => {
    const l = speakerLevels(process.env.IGW_SPEAKER_LOG, Date.now() - 200);
    return l.length >= 2 && l.every((x) => x.rms_db > -30);
};

async function talk(browser) {
    const im = (user, path, body) => call(user, `/api/v1/im-standin/${path}`, body).catch(() => ({ status: 0, body: {} }));
    const owner = await clusterApp();
    let r = await im(DEMO.user, 'calls/start', { groupId: DEMO.group.groupId });
    c.check(r.status === 200, `talk: the call started (${JSON.stringify(r.body)})`);
    const callId = r.body.data && r.body.data.callId;
    const beat = setInterval(() => im(DEMO.user, 'calls/heartbeat', { callId }), 3000);
    try {
        const d0 = await command(owner, { method: 'interaction.open', target,
            params: { purpose: 'ipcTalk', cameraId: camera, callId } }, 'talk: open');
        const sid = d0.sessionId;
        const v = await newViewer(browser);
        await command(owner, { method: 'interaction.mediaOffer',
            params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: await v.offerPublish(440) } } }, 'talk: mediaOffer', sid)
            .then((d) => d.webrtc && v.setAnswer(d.webrtc.sdp));
        const st = await v.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0, 15000).catch((e) => e.stats);
        c.check(st && st.framesDecoded > 0 && st.audioPackets > 0, `talk: the camera's picture and microphone (${JSON.stringify(st)})`);
        await command(owner, { method: 'interaction.mediaState', params: { mediaRevision: 1, state: 'connected' } },
            'talk: mediaState', sid);
        let heard = false;
        for (let i = 0; i < 200 && !heard; i++) (heard = loudNow()) || (await sleep(50));
        c.check(heard, 'talk: the member\'s tone on the camera\'s speaker');
        await app(DEMO.otherUser); // 1002 logged in: a live endpoint of its own
        const dj = await command(owner, { method: 'interaction.join', params: { participantId: '1002' } }, 'talk: join 1002', sid);
        c.check(dj.state === 'joined', `talk: 1002 joined (${JSON.stringify(dj)})`);
        await command(owner, { method: 'interaction.end', params: { reason: 'userHangup' } }, 'talk: end', sid);
        const e = await owner.state(sid, 'ended');
        c.check(e && e.data.reason === 'userHangup', `talk: ended (${JSON.stringify(e)})`);
        await v.close();
    } finally {
        clearInterval(beat);
        await im(DEMO.user, 'calls/hangup', { callId });
    }
}

async function kill(browser) {
    const pids = Object.fromEntries(process.env.IGW_NODE_PIDS.trim().split(/\s+/).map((x) => x.split('=')));
    const urls = Object.fromEntries(process.env.IGW_NODE_URLS.trim().split(/\s+/).map((x) => x.split(/=(.*)/s).slice(0, 2)));
    const a = await clusterApp();
    const s = await openLiveView(c, a, browser, 'live view to lose', token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `frames decoded (${JSON.stringify(st)})`);
    const owner = psql(`SELECT owner_node FROM sessions WHERE session_id = '${s.sid}'`);
    c.check(!!pids[owner], `its owner is one of the nodes (${owner})`);
    // The second application: its WebSocket on the doomed node, its open
    // through the balancer (joining the camera's leg there).
    const w = await wsApp(urls[owner]);
    const wt = token('wopen');
    const wo = await call(DEMO.user, '/api/v1/im/interaction/commands', { endpointId: w.ep,
        command: { msgToken: wt, method: 'interaction.open', target, params: { purpose: 'ipcLiveView', cameraId: camera } } });
    c.check(wo.status === 200 && wo.body.data.accepted === true, `WebSocket app: open accepted (${JSON.stringify(wo.body)})`);
    const wr = await w.wait((e) => e.method === 'interaction.result' && e.msgToken === wt, 10000);
    const wsid = wr && wr.data.sessionId;
    c.check(wr && wr.code === 200 && wsid, `WebSocket app: its result pushed (${JSON.stringify(wr)})`);
    const wowner = psql(`SELECT owner_node FROM sessions WHERE session_id = '${wsid}'`);
    c.check(wowner === owner, `WebSocket app: its session is the doomed node's too (${wowner})`);
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
    const we = await w.wait((e) => e.method === 'interaction.state' && e.sessionId === wsid && e.data.state === 'ended', 10000);
    c.check(w.cuts >= 1 && we && we.data.reason === 'nodeLost',
        `WebSocket app: cut by the kill (${w.cuts}), reconnected through the balancer, its ended nodeLost pushed (${JSON.stringify(we)})`);
    const seqs = w.events.filter((e) => e.method === 'interaction.state' && e.sessionId === wsid).map((e) => e.eventSeq);
    const rows = Number(psql(`SELECT event_seq FROM sessions WHERE session_id = '${wsid}'`));
    c.check(seqs.length === rows && seqs.every((q, i) => q === i + 1),
        `WebSocket app: every state event of its session once, in order (${seqs} of ${rows})`);
    w.close();
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
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ', ['--record-dir', process.env.IGW_REC_DIR,
        '--segment-ms', '2500', '--retain-s', '600', '--speaker-log', process.env.IGW_SPEAKER_LOG]);
    const browser = await launch({ args: AUTOPLAY_ARGS });
    try {
        await flow(browser);
        await playback(browser);
        await talk(browser);
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
