// janus_check.mjs - proves the benchmark's Janus works with a real browser:
// N headless Chromium viewers (one page, one RTCPeerConnection each) watch
// mountpoint 1 through janus.mjs and must decode video and receive audio.
// Then measures Janus's CPU time while they watch. Run by janus_check.sh
// (which starts Janus, the RTP feed and the network namespace).
//
// Environment: JANUS_URL (http://127.0.0.1:PORT/janus), JANUS_PID,
// IGW_PW_DIR (where playwright-core is installed), JANUS_CHECK_VIEWERS
// (default 2), JANUS_CHECK_MEASURE_S (default 5), JANUS_CHECK_VERBOSE=1
// (prints the first offer and answer), IGW_CHROMIUM (default /usr/bin/chromium).
import { Janus, JanusError } from './janus.mjs';
import { CLK_TCK, cpuUs, rssKiB } from './proc.mjs';
import { Checker, launch, newViewer, sleep } from '../media/lib.mjs';

const URL_ = process.env.JANUS_URL;
const PID = Number(process.env.JANUS_PID);
const VIEWERS = Number(process.env.JANUS_CHECK_VIEWERS || 2);
const MEASURE_S = Number(process.env.JANUS_CHECK_MEASURE_S || 5);
const VERBOSE = process.env.JANUS_CHECK_VERBOSE === '1';
const ADDR = process.env.IGW_NETNS_ADDR;
const MEDIA_MS = 10000;
const c = new Checker();
const check = (cond, what) => c.check(cond, what);

// Every a=candidate line's connection address (5th field).
const candidateAddrs = (sdp) =>
    sdp.split(/\r?\n/).filter((l) => l.startsWith('a=candidate:')).map((l) => l.split(' ')[4]);

async function main() {
    check(URL_ && PID > 0 && ADDR, 'JANUS_URL, JANUS_PID and IGW_NETNS_ADDR are set');
    const browser = await launch({ timeout: 20000 });
    const janus = new Janus(URL_);
    try {
        const sid = await janus.session();
        check(Number.isSafeInteger(sid) && sid > 0, `session id ${sid}`);

        // Janus's own error text reaches the caller.
        let err = null;
        try {
            await janus.watch(987654);
        } catch (e) {
            err = e;
        }
        check(err instanceof JanusError && err.code === 455 && /No such mountpoint/i.test(err.reason),
            `watch of a missing mountpoint throws Janus's error (got ${err})`);

        const viewers = [];
        for (let i = 0; i < VIEWERS; i++) {
            const v = await newViewer(browser);
            const { handle, offerSdp } = await janus.watch(1);
            check(viewers.every((v) => v.handle !== handle), `viewer ${i}: a handle of its own (${handle})`);
            check(/^m=video 9 UDP\/TLS\/RTP\/SAVPF 96\b/m.test(offerSdp) && /^a=rtpmap:96 H264\/90000\r?$/m.test(offerSdp) &&
                /^a=fmtp:96 profile-level-id=42e01f;packetization-mode=1\r?$/m.test(offerSdp), `viewer ${i}: offer has H264 pt 96 with the mountpoint's fmtp`);
            check(/^m=audio 9 UDP\/TLS\/RTP\/SAVPF 111\b/m.test(offerSdp) && /^a=rtpmap:111 opus\/48000\/2\r?$/m.test(offerSdp),
                `viewer ${i}: offer has Opus pt 111`);
            const addrs = candidateAddrs(offerSdp);
            check(addrs.length > 0 && addrs.every((a) => a === ADDR), `viewer ${i}: offer candidates all on ${ADDR}: ${addrs.join(',')}`);
            check(/^a=end-of-candidates\r?$/m.test(offerSdp), `viewer ${i}: offer is complete (a=end-of-candidates, half-trickle)`);
            const cands = janus.candidates(handle);
            check(cands.length > 0 && cands.every((c) => c.candidate.startsWith('candidate:')), `viewer ${i}: candidates() lists ${cands.length}`);
            const answer = await v.answer(offerSdp);
            check(/^a=recvonly\r?$/m.test(answer), `viewer ${i}: Chromium answers recvonly`);
            if (VERBOSE && i === 0) {
                console.error('--- janus offer ---\n' + offerSdp.replace(/\r\n/g, '\n'));
                console.error('--- chromium answer candidates ---\n' + answer.split(/\r?\n/).filter((l) => l.startsWith('a=candidate')).join('\n'));
            }
            const started = await janus.start(handle, answer);
            check(started?.result?.status === 'starting', `viewer ${i}: start acknowledged (${JSON.stringify(started)})`);
            viewers.push(Object.assign(v, { handle }));
        }

        for (const [i, v] of viewers.entries()) {
            const up = await janus.waitEvent(v.handle, (e) => e.janus === 'webrtcup', MEDIA_MS).catch((e) => e);
            check(up?.janus === 'webrtcup', `viewer ${i}: Janus reports webrtcup (${up?.message || 'ok'})`);
        }
        const t0 = Date.now();
        for (const [i, v] of viewers.entries()) {
            const left = Math.max(1000, MEDIA_MS - (Date.now() - t0));
            const s = await v.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0 && x.frameWidth > 0, left).catch((e) => e.stats);
            check(s.framesDecoded > 0, `viewer ${i}: framesDecoded ${s.framesDecoded} > 0 within ${MEDIA_MS} ms`);
            check(s.audioPackets > 0, `viewer ${i}: audio packetsReceived ${s.audioPackets} > 0 within ${MEDIA_MS} ms`);
            check(s.frameWidth === 640 && s.frameHeight === 360, `viewer ${i}: decoded 640x360 (got ${s.frameWidth}x${s.frameHeight})`);
        }
        for (const [i, v] of viewers.entries()) {
            const trickles = janus.events(v.handle).filter((e) => e.janus === 'trickle').length;
            check(trickles === 0, `viewer ${i}: no trickle events from Janus (got ${trickles})`);
        }

        // CPU time while the viewers watch: ticks of Janus against packets
        // the viewers received (= packets Janus forwarded, less any lost).
        const before = await Promise.all(viewers.map((v) => v.stats()));
        const cpu0 = cpuUs(PID);
        const w0 = process.hrtime.bigint();
        await sleep(MEASURE_S * 1000);
        const cpu1 = cpuUs(PID);
        const secs = Number(process.hrtime.bigint() - w0) / 1e9;
        const after = await Promise.all(viewers.map((v) => v.stats()));
        let pkts = 0;
        let lost = 0;
        for (let i = 0; i < viewers.length; i++) {
            const vp = after[i].videoPackets - before[i].videoPackets;
            const ap = after[i].audioPackets - before[i].audioPackets;
            check(vp > 0 && ap > 0 && after[i].framesDecoded > before[i].framesDecoded,
                `viewer ${i}: still receiving during the measurement (${vp} video, ${ap} audio packets)`);
            pkts += vp + ap;
            lost += after[i].packetsLost - before[i].packetsLost;
        }
        const ticks = ((cpu1 - cpu0) * CLK_TCK) / 1e6;
        const tps = ticks / secs;
        console.log(`janus_check: janus pid ${PID}: ${ticks.toFixed(0)} ticks in ${secs.toFixed(2)} s = ${tps.toFixed(1)} ticks/s ` +
            `(CLK_TCK ${CLK_TCK}, ${(100 * tps / CLK_TCK).toFixed(1)}% of one core) with ${viewers.length} viewers; ` +
            `${(pkts / secs).toFixed(0)} forwarded pkt/s, ${pkts ? ((cpu1 - cpu0) / pkts).toFixed(1) : 'n/a'} us CPU/pkt, ` +
            `${lost} lost; RSS ${rssKiB(PID)} KiB`);

        // Teardown through the API: detach one, destroy the session, then the
        // session must be gone on the server too.
        await janus.detach(viewers[0].handle);
        check(!janus.handles.has(viewers[0].handle), 'detach forgets the handle');
        await janus.destroy();
        const r = await fetch(`${URL_}/${sid}`, {
            method: 'POST',
            body: JSON.stringify({ janus: 'keepalive', transaction: 'gone-check' }),
        }).then((x) => x.json());
        check(r.janus === 'error' && r.error?.code === 458, `destroyed session is gone on the server (${JSON.stringify(r)})`);
        let threw = false;
        try {
            await janus.keepalive();
        } catch {
            threw = true;
        }
        check(threw, 'keepalive after destroy throws');
        check(cpuUs(PID) >= cpu1, 'Janus is still running after the session is destroyed');
        for (const v of viewers) await v.close();
    } finally {
        await janus.destroy().catch(() => {});
        await browser.close().catch(() => {});
    }
}

main()
    .catch((e) => check(false, `unexpected: ${e.stack || e}`))
    .finally(() => c.done('janus_check'));
