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
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { Janus, JanusError } from './janus.mjs';

const URL_ = process.env.JANUS_URL;
const PID = Number(process.env.JANUS_PID);
const VIEWERS = Number(process.env.JANUS_CHECK_VIEWERS || 2);
const MEASURE_S = Number(process.env.JANUS_CHECK_MEASURE_S || 5);
const VERBOSE = process.env.JANUS_CHECK_VERBOSE === '1';
const MEDIA_MS = 10000;

let checks = 0;
let failures = 0;
function check(cond, what) {
    checks++;
    if (!cond) {
        failures++;
        console.error(`FAIL: ${what}`);
    }
    return !!cond;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function playwright() {
    const dir = process.env.IGW_PW_DIR;
    if (!dir) throw new Error('IGW_PW_DIR is not set: run janus_check.sh');
    return createRequire(`${dir}/janus-check.cjs`)('playwright-core');
}

// Janus's CPU time so far in clock ticks (utime + stime, fields 14 and 15 of
// /proc/<pid>/stat; the command name in parentheses may hold spaces).
function cpuTicks(pid) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
}
function rssKiB(pid) {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
}

// Runs in the page: one recvonly peer connection answering Janus's offer.
function pageSetup() {
    const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
    const gathered = (ms) =>
        new Promise((resolve, reject) => {
            if (pc.iceGatheringState === 'complete') return resolve();
            const t = setTimeout(() => reject(new Error(`ICE gathering not complete after ${ms} ms`)), ms);
            pc.addEventListener('icegatheringstatechange', () => {
                if (pc.iceGatheringState === 'complete') {
                    clearTimeout(t);
                    resolve();
                }
            });
        });
    window.__v = {
        async answer(sdp) {
            await pc.setRemoteDescription({ type: 'offer', sdp });
            await pc.setLocalDescription(await pc.createAnswer());
            await gathered(5000);
            return pc.localDescription.sdp;
        },
        async stats() {
            const s = { framesDecoded: 0, videoPackets: 0, audioPackets: 0, videoLost: 0, audioLost: 0,
                frameWidth: 0, frameHeight: 0, connectionState: pc.connectionState };
            (await pc.getStats()).forEach((r) => {
                if (r.type !== 'inbound-rtp') return;
                if (r.kind === 'video') {
                    s.framesDecoded += r.framesDecoded || 0;
                    s.videoPackets += r.packetsReceived || 0;
                    s.videoLost += r.packetsLost || 0;
                    s.frameWidth = r.frameWidth || s.frameWidth;
                    s.frameHeight = r.frameHeight || s.frameHeight;
                } else if (r.kind === 'audio') {
                    s.audioPackets += r.packetsReceived || 0;
                    s.audioLost += r.packetsLost || 0;
                }
            });
            return s;
        },
    };
    return typeof RTCPeerConnection;
}

async function waitStats(page, pred, ms) {
    const deadline = Date.now() + ms;
    let last;
    for (;;) {
        last = await page.evaluate(() => window.__v.stats());
        if (pred(last) || Date.now() >= deadline) return last;
        await sleep(100);
    }
}

// Every a=candidate line's connection address (5th field).
const candidateAddrs = (sdp) =>
    sdp.split(/\r?\n/).filter((l) => l.startsWith('a=candidate:')).map((l) => l.split(' ')[4]);

async function main() {
    check(URL_ && PID > 0, 'JANUS_URL and JANUS_PID are set');
    const clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
    const { chromium } = playwright();
    const browser = await chromium.launch({
        executablePath: process.env.IGW_CHROMIUM || '/usr/bin/chromium',
        headless: true,
        // mDNS host names would be unresolvable for Janus (no avahi here).
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
            '--disable-sync', '--no-first-run', '--disable-features=WebRtcHideLocalIpsWithMdns'],
        timeout: 20000,
    });
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
            const context = await browser.newContext();
            const page = await context.newPage();
            check((await page.evaluate(pageSetup)) === 'function', `viewer ${i}: RTCPeerConnection in the page`);
            const { handle, offerSdp } = await janus.watch(1);
            check(viewers.every((v) => v.handle !== handle), `viewer ${i}: a handle of its own (${handle})`);
            check(/^m=video 9 UDP\/TLS\/RTP\/SAVPF 96\b/m.test(offerSdp) && /^a=rtpmap:96 H264\/90000\r?$/m.test(offerSdp) &&
                /^a=fmtp:96 profile-level-id=42e01f;packetization-mode=1\r?$/m.test(offerSdp), `viewer ${i}: offer has H264 pt 96 with the mountpoint's fmtp`);
            check(/^m=audio 9 UDP\/TLS\/RTP\/SAVPF 111\b/m.test(offerSdp) && /^a=rtpmap:111 opus\/48000\/2\r?$/m.test(offerSdp),
                `viewer ${i}: offer has Opus pt 111`);
            const addrs = candidateAddrs(offerSdp);
            check(addrs.length > 0 && addrs.every((a) => a.startsWith('127.')), `viewer ${i}: offer candidates all in 127/8: ${addrs.join(',')}`);
            check(/^a=end-of-candidates\r?$/m.test(offerSdp), `viewer ${i}: offer is complete (a=end-of-candidates, half-trickle)`);
            const cands = janus.candidates(handle);
            check(cands.length > 0 && cands.every((c) => c.candidate.startsWith('candidate:')), `viewer ${i}: candidates() lists ${cands.length}`);
            const answer = await page.evaluate((sdp) => window.__v.answer(sdp), offerSdp);
            check(/^a=recvonly\r?$/m.test(answer), `viewer ${i}: Chromium answers recvonly`);
            if (VERBOSE && i === 0) {
                console.error('--- janus offer ---\n' + offerSdp.replace(/\r\n/g, '\n'));
                console.error('--- chromium answer candidates ---\n' + answer.split(/\r?\n/).filter((l) => l.startsWith('a=candidate')).join('\n'));
            }
            const started = await janus.start(handle, answer);
            check(started?.result?.status === 'starting', `viewer ${i}: start acknowledged (${JSON.stringify(started)})`);
            viewers.push({ page, context, handle });
        }

        for (const [i, v] of viewers.entries()) {
            const up = await janus.waitEvent(v.handle, (e) => e.janus === 'webrtcup', MEDIA_MS).catch((e) => e);
            check(up?.janus === 'webrtcup', `viewer ${i}: Janus reports webrtcup (${up?.message || 'ok'})`);
        }
        const t0 = Date.now();
        for (const [i, v] of viewers.entries()) {
            const left = Math.max(1000, MEDIA_MS - (Date.now() - t0));
            const s = await waitStats(v.page, (x) => x.framesDecoded > 0 && x.audioPackets > 0 && x.frameWidth > 0, left);
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
        const before = await Promise.all(viewers.map((v) => v.page.evaluate(() => window.__v.stats())));
        const ticks0 = cpuTicks(PID);
        const w0 = process.hrtime.bigint();
        await sleep(MEASURE_S * 1000);
        const ticks1 = cpuTicks(PID);
        const secs = Number(process.hrtime.bigint() - w0) / 1e9;
        const after = await Promise.all(viewers.map((v) => v.page.evaluate(() => window.__v.stats())));
        let pkts = 0;
        let lost = 0;
        for (let i = 0; i < viewers.length; i++) {
            const vp = after[i].videoPackets - before[i].videoPackets;
            const ap = after[i].audioPackets - before[i].audioPackets;
            check(vp > 0 && ap > 0 && after[i].framesDecoded > before[i].framesDecoded,
                `viewer ${i}: still receiving during the measurement (${vp} video, ${ap} audio packets)`);
            pkts += vp + ap;
            lost += after[i].videoLost + after[i].audioLost - before[i].videoLost - before[i].audioLost;
        }
        const tps = (ticks1 - ticks0) / secs;
        console.log(`janus_check: janus pid ${PID}: ${(ticks1 - ticks0)} ticks in ${secs.toFixed(2)} s = ${tps.toFixed(1)} ticks/s ` +
            `(CLK_TCK ${clkTck}, ${(100 * tps / clkTck).toFixed(1)}% of one core) with ${viewers.length} viewers; ` +
            `${(pkts / secs).toFixed(0)} forwarded pkt/s, ${pkts ? ((ticks1 - ticks0) / clkTck * 1e6 / pkts).toFixed(1) : 'n/a'} us CPU/pkt, ` +
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
        check(cpuTicks(PID) >= ticks1, 'Janus is still running after the session is destroyed');
        for (const v of viewers) await v.context.close().catch(() => {});
    } finally {
        await janus.destroy().catch(() => {});
        await browser.close().catch(() => {});
    }
}

main().then(
    () => {
        if (failures) {
            console.log(`janus_check: ${checks} checks, ${failures} failures`);
            process.exit(1);
        }
        console.log(`janus_check: ${checks} checks passed`);
        process.exit(0);
    },
    (e) => {
        console.error(`janus_check: error: ${e.stack || e}`);
        console.log(`janus_check: ${checks} checks, ${failures + 1} failures`);
        process.exit(1);
    },
);
