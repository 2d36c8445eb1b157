// media_test.mjs HOST VCAM - the media core with real peers: igw-vcam (GStreamer
// webrtcbin) publishes to igw-media-host, headless Chromium pages view it.
// Run by media_test.sh (namespaces, playwright-core); prints
// "media_test: N checks passed" or exits non-zero.
import { execSync } from 'node:child_process';
import { launch, newViewer, sleep, spawnLines, mediaHost, Checker } from './lib.mjs';

const [HOST, VCAM] = process.argv.slice(2);
const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
const CONSENT_MS = 3000;
const c = new Checker();

// ---- the host: replies and events on one stream ----
const { host, call, waitEvent } = mediaHost(HOST, ['--consent-ms', String(CONSENT_MS), '--address', ADDR]);
const stats = async (id) => call({ op: 'stats', id });

async function connectViewer(browser, id, rev, { platformOffers = false, paused = false } = {}) {
    const v = await newViewer(browser);
    if (platformOffers) {
        const r = await call({ op: 'viewer_offer', source: 'cam', id, rev, paused });
        if (!c.check(r.ok, `${id}: platform offer made (${r.error || ''})`)) return v;
        v.ourSdp = r.sdp;
        const answer = await v.answer(r.sdp);
        const a = await call({ op: 'viewer_answer', id, rev, sdp: answer });
        c.check(a.ok, `${id}: Chromium's answer applied (${a.error || ''})`);
    } else {
        const offer = await v.offerRecvOnly();
        const r = await call({ op: 'viewer', source: 'cam', id, rev, paused, sdp: offer });
        if (!c.check(r.ok, `${id}: answer to Chromium's offer (${r.error || ''})`)) return v;
        v.ourSdp = r.sdp;
        c.check(/a=setup:(passive|active)/.test(r.sdp) && !/a=setup:actpass/.test(r.sdp), `${id}: answer setup is not actpass`);
        c.check(/a=ice-lite/.test(r.sdp), `${id}: answer says ice-lite`);
        c.check(/a=group:BUNDLE/.test(r.sdp) && /a=rtcp-mux/.test(r.sdp), `${id}: answer bundles with rtcp-mux`);
        await v.setAnswer(r.sdp);
    }
    return v;
}

const playing = (s) => s.framesDecoded > 0 && s.audioPackets > 0;

async function main() {
    // ---- the camera ----
    const cam = spawnLines(VCAM, ['--address', ADDR], { prefix: '[vcam] ' });
    const offer = await cam.next('offer', 15000);
    const src = await call({ op: 'source', id: 'cam', rev: 1, sdp: offer.sdp });
    c.check(src.ok, `camera offer answered (${src.error || ''})`);
    cam.send({ type: 'answer', sdp: src.sdp });
    c.check(!!(await waitEvent((e) => e.id === 'cam' && e.event === 'dtls-connected', 10000)), 'camera DTLS connected');
    c.check(!!(await waitEvent((e) => e.id === 'cam' && e.event === 'first-packet', 5000)), 'camera media arrives');

    const browser = await launch();
    // ---- viewer A offers, viewer B is offered to ----
    const viewers = {};
    for (const [name, opts] of [['vA', {}], ['vB', { platformOffers: true }]]) {
        const v = (viewers[name] = await connectViewer(browser, name, 1, opts));
        const t0 = Date.now();
        const s = await v.waitFor(playing, 5000).catch((e) => e.stats);
        c.check(s && playing(s), `${name}: video frames decoded and audio received within 5 s (${JSON.stringify(s)})`);
        console.error(`media_test: ${name} playing ${Date.now() - t0} ms after signaling`);
    }
    const [a, b] = [viewers.vA, viewers.vB];
    c.check(!!(await waitEvent((e) => e.id === 'vA' && e.event === 'keyframe', 1000)), 'vA: video started at a keyframe');

    // ---- pause A: nothing more is sent to it, B goes on ----
    // What is measured is what the platform sends and Chromium receives, not
    // what it decodes: a busy Chromium decodes frames it received before the
    // pause for seconds after it (framesReceived still, framesDecoded
    // catching up in bursts after stalls of over a second). The host's
    // video_out after the pause's return counts everything sent before it,
    // so Chromium can never have more, however late it reads its socket.
    // With loss toward A before the pause, Chromium still NACKs packets from
    // before it after it: retransmissions must not pass the barrier either.
    // B's windows here and below count video packets too: that B is still
    // served is what they check, and a busy machine also loses camera packets
    // before the host (no upstream repair), after which Chromium assembles
    // and decodes no frame until the next keyframe while packets flow on.
    const netns = process.env.IGW_NETNS_ADDR && process.env.IGW_NETNS_ADDR !== '127.0.0.1';
    const nft = (cmd) => execSync(`nft ${cmd}`);
    const portOf = (sdp) => /a=candidate:\S+ 1 udp \d+ \S+ (\d+) typ host/.exec(sdp)[1];
    if (netns) {
        nft('add table inet igwloss');
        nft(`add chain inet igwloss out '{ type filter hook output priority 0; }'`);
        nft(`add rule inet igwloss out udp sport ${portOf(a.ourSdp)} numgen random mod 100 '<' 20 drop`);
        await sleep(1000);
    }
    let r = await call({ op: 'track', id: 'vA', rev: 1, kinds: 'video', trigger: 'pause' });
    const p0 = await stats('vA'); // after the return: every video packet sent before it
    if (netns) nft('delete table inet igwloss');
    c.check(r.ok && r.state === 'paused', `vA: video paused (${JSON.stringify(r)})`);
    let a1 = await a.stats(), b1 = await b.stats();
    await sleep(1500);
    const p1 = await stats('vA');
    let a2 = await a.stats(), b2 = await b.stats();
    c.check(p1.video_out === p0.video_out,
        `vA: no video sent after the pause returned, retransmissions included (${p0.video_out} -> ${p1.video_out}; ${p1.nack_in - p0.nack_in} NACKed since)`);
    c.check(a2.videoPackets <= p0.video_out,
        `vA: Chromium received no video sent after the pause (${a2.videoPackets} received, ${p0.video_out} sent before it; frames decoded ${a1.framesDecoded} -> ${a2.framesDecoded})`);
    c.check(b2.videoPackets - b1.videoPackets >= 15, `vB: video goes on while vA is paused (packets ${b1.videoPackets} -> ${b2.videoPackets})`);
    c.check(a2.audioPackets > a1.audioPackets, 'vA: audio goes on while its video is paused');
    r = await call({ op: 'stats', id: 'vA' });
    c.check(r.video === 'paused' && r.audio === 'active', `vA: track states video paused, audio active (${r.video}/${r.audio})`);

    // ---- stale generation: refused, changes nothing ----
    r = await call({ op: 'track', id: 'vA', rev: 0, kinds: 'video', trigger: 'resume' });
    c.check(!r.ok && r.rc === 'ESTALE', `old mediaRevision track op refused (${r.rc})`);
    r = await call({ op: 'viewer', source: 'cam', id: 'vA', rev: 1, sdp: offer.sdp });
    c.check(!r.ok && r.rc === 'ESTALE', `offer with the same mediaRevision refused (${r.rc}: ${r.error})`);
    r = await call({ op: 'stats', id: 'vA' });
    c.check(r.ok && r.video === 'paused', 'vA still paused after the refused operations');

    // ---- resume A: frames again within 1 s, a keyframe was requested ----
    const pliBefore = (await stats('cam')).pli_out;
    a1 = await a.stats();
    r = await call({ op: 'track', id: 'vA', rev: 1, kinds: 'video', trigger: 'resume' });
    c.check(r.ok && r.state === 'active', 'vA: video resumed');
    const resumedAt = Date.now();
    const s = await a.waitFor((x) => x.framesDecoded > a1.framesDecoded, 1000).catch((e) => e.stats);
    c.check(s && s.framesDecoded > a1.framesDecoded, `vA: frames again within 1 s of resume (${Date.now() - resumedAt} ms)`);
    await sleep(200);
    c.check((await stats('cam')).pli_out > pliBefore, 'a keyframe was requested from the camera on resume');

    // ---- garbage and unusable descriptions ----
    r = await call({ op: 'viewer', source: 'cam', id: 'vX', rev: 1, sdp: 'hello world' });
    c.check(!r.ok && r.rc === 'EINVAL' && /SDP/.test(r.error), `garbage SDP refused clearly (${r.error})`);
    const noBundle = (await newViewer(browser).then((v) => v.offerRecvOnly())).replace(/a=group:BUNDLE[^\r\n]*\r?\n/, '');
    r = await call({ op: 'viewer', source: 'cam', id: 'vX', rev: 1, sdp: noBundle });
    c.check(!r.ok && /BUNDLE/.test(r.error), `offer without BUNDLE refused (${r.error})`);
    r = await call({ op: 'stats', id: 'vX' });
    c.check(!r.ok, 'a refused viewer leaves nothing behind');
    // A newer generation that cannot be served is refused before it replaces anything.
    r = await call({ op: 'viewer', source: 'cam', id: 'vB', rev: 2, sdp: offer.sdp }); // sendonly: nothing to view
    c.check(!r.ok && r.rc === 'EINVAL' && /codec/.test(r.error), `unusable newer offer refused (${r.error})`);
    b1 = await b.stats();
    await sleep(700);
    b2 = await b.stats();
    r = await call({ op: 'stats', id: 'vB' });
    c.check(r.ok && r.connected && b2.videoPackets > b1.videoPackets,
        `vB revision 1 untouched by the refused revision 2 (video packets ${b1.videoPackets} -> ${b2.videoPackets})`);

    // ---- stop A: B unaffected; pause after stop is a conflict ----
    r = await call({ op: 'track', id: 'vA', rev: 1, kinds: 'both', trigger: 'unsubscribe' });
    c.check(r.ok && r.state === 'stopped', 'vA: unsubscribed');
    r = await call({ op: 'track', id: 'vA', rev: 1, kinds: 'video', trigger: 'pause' });
    c.check(!r.ok && r.rc === 'ECONFLICT', `pause after stop is refused by the machine (${r.error})`);
    b1 = await b.stats();
    await sleep(1000);
    b2 = await b.stats();
    c.check(b2.videoPackets - b1.videoPackets >= 10, `vB: unaffected by vA stopping (video packets ${b1.videoPackets} -> ${b2.videoPackets})`);

    // ---- a viewer that vanishes is detected and released ----
    const children = () => execSync(`pgrep -P ${process.pid} -x chromium || true`).toString().split(/\s+/).filter(Boolean);
    const before = new Set(children());
    const browser2 = await launch();
    const victim = children().filter((p) => !before.has(p));
    const v3 = await connectViewer(browser2, 'vC', 1);
    const s3 = await v3.waitFor(playing, 5000).catch((e) => e.stats);
    c.check(s3 && playing(s3), 'vC: playing');
    c.check(victim.length === 1, `the second browser's process is known (${victim})`);
    process.kill(Number(victim[0]), 'SIGKILL'); // the whole browser, as a crash would
    const gone = await waitEvent((e) => e.id === 'vC' && e.event === 'closed', CONSENT_MS + 4000);
    c.check(!!gone, `vC: released after its browser was killed (${gone && gone.reason})`);
    r = await call({ op: 'stats', id: 'cam' });
    c.check(r.ok && r.connected && r.viewers === 2, `camera still up with 2 viewers (${r.viewers})`);
    b1 = await b.stats();
    await sleep(1000);
    b2 = await b.stats();
    c.check(b2.videoPackets - b1.videoPackets >= 10, `vB: plays on after vC vanished (video packets ${b1.videoPackets} -> ${b2.videoPackets})`);
    r = await call({ op: 'stats', id: 'vB' });
    c.check(r.sr_out > 0, `vB: sender reports sent (${r.sr_out})`);

    // ---- loss toward vB: its NACKs are answered from the source's history ----
    if (process.env.IGW_NETNS_ADDR && process.env.IGW_NETNS_ADDR !== '127.0.0.1') {
        const port = /a=candidate:\S+ 1 udp \d+ \S+ (\d+) typ host/.exec(b.ourSdp)[1];
        const nft = (cmd) => execSync(`nft ${cmd}`);
        nft('add table inet igwloss');
        nft(`add chain inet igwloss out '{ type filter hook output priority 0; }'`);
        nft(`add rule inet igwloss out udp sport ${port} numgen random mod 100 '<' 3 drop`); // 3% of what vB is sent
        const [s0, h0] = [await b.stats(), await stats('vB')];
        await sleep(3000);
        const [s1, h1] = [await b.stats(), await stats('vB')];
        nft('delete table inet igwloss');
        c.check(s1.nackCount > s0.nackCount, `vB: Chromium sent NACKs under 3% loss (${s0.nackCount} -> ${s1.nackCount})`);
        c.check(h1.nack_in > h0.nack_in && h1.rtx_out > h0.rtx_out,
            `vB: NACKs answered with retransmissions (nack_in ${h0.nack_in} -> ${h1.nack_in}, rtx_out ${h0.rtx_out} -> ${h1.rtx_out})`);
        c.check(s1.framesDecoded - s0.framesDecoded >= 45, `vB: plays on under loss (${s0.framesDecoded} -> ${s1.framesDecoded})`);
    }

    // ---- a new generation replaces the peer; its tracks keep their states ----
    // (vA unsubscribed both above: the new connection starts stopped, and
    // subscribes on its own revision.)
    const a3 = await connectViewer(browser, 'vA', 2);
    await sleep(1500);
    r = await call({ op: 'stats', id: 'vA' });
    c.check(r.ok && r.video === 'stopped' && r.audio === 'stopped', `vA revision 2: the track states carried over (${r.video}/${r.audio})`);
    const q3 = await a3.stats();
    c.check(q3.videoPackets === 0 && q3.audioPackets === 0, `vA revision 2: nothing sent while stopped (${q3.videoPackets}/${q3.audioPackets})`);
    r = await call({ op: 'track', id: 'vA', rev: 2, kinds: 'both', trigger: 'subscribe' });
    c.check(r.ok && r.state === 'active', `vA revision 2: subscribed again (${JSON.stringify(r)})`);
    const sa3 = await a3.waitFor(playing, 5000).catch((e) => e.stats);
    c.check(sa3 && playing(sa3), `vA revision 2 plays (${JSON.stringify(sa3)})`);
    c.check(!!(await waitEvent((e) => e.id === 'vA' && e.rev === 1 && e.event === 'closed' && /superseded/.test(e.reason), 1000)),
        'vA revision 1 closed as superseded');

    // ---- Chromium as a camera: our receiver reports reach it (loss, jitter, round trip) ----
    {
        const page = await (await browser.newContext()).newPage();
        const camOffer = await page.evaluate(async () => {
            const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle' });
            window.camPc = pc;
            const cv = document.createElement('canvas');
            cv.width = 320;
            cv.height = 240;
            const g = cv.getContext('2d');
            let f = 0;
            setInterval(() => { g.fillStyle = `hsl(${f++ % 360},80%,50%)`; g.fillRect(0, 0, 320, 240); }, 33);
            const ac = new AudioContext(), osc = ac.createOscillator(), dst = ac.createMediaStreamDestination();
            osc.connect(dst);
            osc.start();
            for (const t of [...cv.captureStream(30).getTracks(), ...dst.stream.getTracks()])
                pc.addTransceiver(t, { direction: 'sendonly' });
            await pc.setLocalDescription(await pc.createOffer());
            await new Promise((ok) => {
                if (pc.iceGatheringState === 'complete') ok();
                pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && ok();
            });
            return pc.localDescription.sdp;
        });
        r = await call({ op: 'source', id: 'chromecam', rev: 1, sdp: camOffer });
        c.check(r.ok, `Chromium's camera offer answered (${r.error || ''})`);
        if (r.ok) {
            await page.evaluate((sdp) => window.camPc.setRemoteDescription({ type: 'answer', sdp }), r.sdp);
            const deadline = Date.now() + 12000; // a report a second or so; a busy machine is slower
            let rep = [];
            while (Date.now() < deadline) {
                rep = await page.evaluate(async () => {
                    const out = [];
                    (await window.camPc.getStats()).forEach((x) => {
                        if (x.type === 'remote-inbound-rtp') out.push({ kind: x.kind, rtt: x.roundTripTime, fl: x.fractionLost, jitter: x.jitter });
                    });
                    return out;
                });
                if (rep.length === 2 && rep.every((x) => x.rtt !== undefined)) break;
                await sleep(250);
            }
            c.check(rep.length === 2 && rep.every((x) => typeof x.rtt === 'number' && x.rtt >= 0 && x.rtt < 1 && typeof x.jitter === 'number'),
                `Chromium reads our receiver reports for both tracks: round trip from LSR/DLSR, jitter (${JSON.stringify(rep)})`);
            const cs = await stats('chromecam');
            c.check(cs.rtp_in > 0 && cs.keyframes_in > 0, `Chromium's H264 and Opus arrive (${cs.rtp_in} packets, ${cs.keyframes_in} keyframes)`);
            await call({ op: 'close', id: 'chromecam' });
        }
    }

    // ---- closing the camera closes its viewers ----
    r = await call({ op: 'close', id: 'cam' });
    c.check(r.ok, 'camera closed');
    // A busy machine (a fresh build beside the test) can take seconds to report it.
    const vbClosed = await waitEvent((e) => e.id === 'vB' && e.event === 'closed' && /source/.test(e.reason), 8000);
    c.check(!!vbClosed, 'vB closed because the source closed');
    // ---- configuration reaches the descriptions: port range, announced address, full ICE ----
    const h2 = spawnLines(HOST, ['--address', ADDR, '--ports', '41000-41009', '--announce', '203.0.113.7', '--ice-full'],
        { prefix: '[host2] ' });
    h2.send({ op: 'source_rtp', id: 'feed', port: 0, video_pt: 96, audio_pt: 111 });
    const fr = await h2.next('reply');
    h2.send({ op: 'viewer_offer', source: 'feed', id: 'v', rev: 1 });
    const vo = await h2.next('reply');
    const cands = [...(vo.sdp || '').matchAll(/a=candidate:\S+ 1 udp \d+ (\S+) (\d+) typ host/g)];
    c.check(fr.ok && vo.ok && cands.length > 0, `a configured host offers (${vo.error || cands.length + ' candidates'})`);
    c.check(cands.every((m) => m[1] === '203.0.113.7'), 'candidates carry the announced address');
    c.check(cands.every((m) => Number(m[2]) >= 41000 && Number(m[2]) <= 41009), 'candidate ports are in the configured range');
    c.check(!/a=ice-lite/.test(vo.sdp) && /a=setup:actpass/.test(vo.sdp), 'full ICE: no ice-lite; an offer says actpass');
    h2.end();
    c.check((await h2.waitExit(10000).catch(() => ({ code: 'hung' }))).code === 0, 'the configured host exits cleanly');

    cam.end();
    await browser.close();
    host.end();
    const ex = await host.waitExit(10000).catch(() => ({ code: 'hung' }));
    c.check(ex.code === 0, `host exits cleanly under sanitizers (${ex.code})`);
    await cam.waitExit(5000).catch(() => cam.kill('SIGKILL'));
}

main()
    .catch((e) => c.check(false, `unexpected: ${e.stack || e}`))
    .finally(() => c.done('media_test'));
