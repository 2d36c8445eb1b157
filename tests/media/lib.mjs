// lib.mjs - the browser side of the media tests: headless Chromium driven by
// playwright-core (installed by the calling .sh into $IGW_PW_DIR, see
// vcam_direct.sh), one RTCPeerConnection per viewer page, and a child-process
// helper that speaks JSON lines (igw-vcam's stdio signaling).
//
//   import { launch, newViewer, spawnLines, Checker } from './lib.mjs';
//   const browser = await launch();
//   const v = await newViewer(browser);
//   const answer = await v.answer(offerSdp);   // or v.offerRecvOnly() + v.setAnswer()
//   await v.waitFor((s) => s.framesDecoded > 0, 5000);
//
// Nothing here installs anything or picks addresses: run it where the peers
// are reachable (the .sh scripts run it in a network namespace of their own).
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import readline from 'node:readline';

function playwright() {
    const dir = process.env.IGW_PW_DIR;
    if (!dir) throw new Error('IGW_PW_DIR is not set: run through the .sh script that installs playwright-core');
    const require = createRequire(`${dir}/igw-media-tests.cjs`);
    return require('playwright-core');
}

export const CHROMIUM = process.env.IGW_CHROMIUM || '/usr/bin/chromium';

// Chromium flags: no sandbox/GPU in CI containers, fake devices so that
// getUserMedia never prompts, nothing phoning home, and real host IPs in
// candidates (mDNS names would be unresolvable for webrtcbin and igw).
export const CHROMIUM_ARGS = [
    '--no-sandbox',
    '--disable-gpu',
    '--use-fake-device-for-media-stream',
    '--use-fake-ui-for-media-stream',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-features=WebRtcHideLocalIpsWithMdns',
];

// For pages that play or make sound without a user gesture (WebAudio).
export const AUTOPLAY_ARGS = ['--autoplay-policy=no-user-gesture-required'];

/** Starts headless Chromium; close it with `await browser.close()`. The
 * timeout only bounds a hang: a start that reads a cold page cache on a busy
 * 2-core machine was seen to take over 15 s. */
export async function launch(opts = {}) {
    const { chromium } = playwright();
    return chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [...CHROMIUM_ARGS, ...(opts.args || [])],
        timeout: opts.timeout || 60000,
    });
}

// Runs inside the page: one peer connection, received tracks shown in
// <video> elements (so a screenshot shows the picture), and the helpers the
// Node side calls through page.evaluate.
function pageSetup() {
    const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
    const stream = new MediaStream();
    const video = document.createElement('video');
    video.autoplay = true;
    video.muted = true;
    video.playsInline = true;
    document.body.style.margin = '0';
    document.body.appendChild(video);
    pc.ontrack = (e) => {
        stream.addTrack(e.track);
        video.srcObject = stream;
    };
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
    // Keyframe requests go through an encoded transform on the video
    // receiver (pass-through; sendKeyFrameRequest makes Chromium send a
    // PLI/FIR now instead of when it thinks it needs one).
    let kfWorker = null;
    let kfSeq = 0;
    const kfWaiters = new Map();
    const workerCode = `
        let transformer = null;
        onrtctransform = (e) => {
            transformer = e.transformer;
            transformer.readable.pipeTo(transformer.writable);
            postMessage({ ready: true });
        };
        onmessage = async (e) => {
            try {
                if (!transformer) throw new Error('no transform yet');
                await transformer.sendKeyFrameRequest();
                postMessage({ id: e.data.id, ok: true });
            } catch (err) {
                postMessage({ id: e.data.id, ok: false, error: String(err) });
            }
        };`;
    // Talk: a 440 Hz tone from WebAudio on the audio sender (no
    // microphone: the fake device's beeps would come and go).
    let tone = null;
    const audioTransceiver = () => pc.getTransceivers().find((t) => t.receiver.track.kind === 'audio');
    window.__igw = {
        pc,
        async requestKeyFrame(ms) {
            const receiver = pc.getReceivers().find((r) => r.track && r.track.kind === 'video');
            if (!receiver) throw new Error('no video receiver');
            if (!kfWorker) {
                kfWorker = new Worker(URL.createObjectURL(new Blob([workerCode], { type: 'text/javascript' })));
                const ready = new Promise((resolve) => {
                    kfWorker.onmessage = (e) => {
                        if (e.data.ready) return resolve();
                        const w = kfWaiters.get(e.data.id);
                        if (w) (kfWaiters.delete(e.data.id), e.data.ok ? w.resolve() : w.reject(new Error(e.data.error)));
                    };
                });
                receiver.transform = new RTCRtpScriptTransform(kfWorker, {});
                await ready;
            }
            const id = ++kfSeq;
            return new Promise((resolve, reject) => {
                const t = setTimeout(() => (kfWaiters.delete(id), reject(new Error('keyframe request timed out'))), ms);
                kfWaiters.set(id, { resolve: () => (clearTimeout(t), resolve()), reject: (e) => (clearTimeout(t), reject(e)) });
                kfWorker.postMessage({ id });
            });
        },
        // Renegotiation: restartIce() and a new offer on the same
        // connection (new ICE credentials and candidates, the same DTLS
        // association), complete once the new gathering is.
        async restartIce(ms) {
            const ufrag = (s) => (/a=ice-ufrag:(\S+)/.exec(s || '') || [])[1];
            const before = ufrag(pc.localDescription && pc.localDescription.sdp);
            pc.restartIce();
            await pc.setLocalDescription(await pc.createOffer());
            const deadline = Date.now() + ms;
            for (;;) {
                const sdp = pc.localDescription.sdp;
                if (ufrag(sdp) !== before && pc.iceGatheringState === 'complete' && /a=candidate/.test(sdp)) return sdp;
                if (Date.now() > deadline) throw new Error(`the restarted ICE gathering is not complete after ${ms} ms`);
                await new Promise((r) => setTimeout(r, 20));
            }
        },
        async offerRecvOnly(ms) {
            pc.addTransceiver('audio', { direction: 'recvonly' });
            pc.addTransceiver('video', { direction: 'recvonly' });
            await pc.setLocalDescription(await pc.createOffer());
            await gathered(ms);
            return pc.localDescription.sdp;
        },
        // What the viewer says: a constant tone of freq Hz (WebAudio, gain
        // 0.5: window.__tone), or with freq 0 the (fake) microphone of
        // getUserMedia as it is: no echo cancellation, noise suppression or
        // gain control reshaping the speech.
        async voice(freq) {
            if (!freq)
                return (await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false,
                    noiseSuppression: false, autoGainControl: false } })).getAudioTracks()[0];
            const ac = new AudioContext();
            await ac.resume();
            const osc = ac.createOscillator();
            osc.frequency.value = freq;
            const gain = ac.createGain();
            gain.gain.value = 0.5;
            const dst = ac.createMediaStreamDestination();
            osc.connect(gain).connect(dst);
            osc.start();
            window.__tone = { ac, osc, gain };
            return dst.stream.getAudioTracks()[0];
        },
        // Talk: the voice published on a sendrecv audio transceiver, video
        // received.
        async offerPublish(ms, freq) {
            const track = await this.voice(freq);
            pc.addTransceiver(track, { direction: 'sendrecv', streams: [new MediaStream([track])] });
            pc.addTransceiver('video', { direction: 'recvonly' });
            await pc.setLocalDescription(await pc.createOffer());
            await gathered(ms);
            return pc.localDescription.sdp;
        },
        // The AI session's offer (docs/ai.md): audio sendonly (the user's
        // voice), audio recvonly (the assistant's voice), video recvonly
        // (the camera), in that order.
        async offerAssistant(ms, freq) {
            const track = await this.voice(freq);
            pc.addTransceiver(track, { direction: 'sendonly' });
            pc.addTransceiver('audio', { direction: 'recvonly' });
            pc.addTransceiver('video', { direction: 'recvonly' });
            await pc.setLocalDescription(await pc.createOffer());
            await gathered(ms);
            return pc.localDescription.sdp;
        },
        async answer(sdp, ms) {
            await pc.setRemoteDescription({ type: 'offer', sdp });
            await pc.setLocalDescription(await pc.createAnswer());
            await gathered(ms);
            return pc.localDescription.sdp;
        },
        async setAnswer(sdp) {
            await pc.setRemoteDescription({ type: 'answer', sdp });
        },
        async answerTalking(sdp, ms) {
            await pc.setRemoteDescription({ type: 'offer', sdp });
            const ctx = new AudioContext();
            await ctx.resume();
            const osc = ctx.createOscillator();
            osc.frequency.value = 440;
            const gain = ctx.createGain();
            gain.gain.value = 1;
            const dest = ctx.createMediaStreamDestination();
            osc.connect(gain).connect(dest);
            osc.start();
            tone = { ctx, gain, track: dest.stream.getAudioTracks()[0] };
            const t = audioTransceiver();
            if (!t) throw new Error('the offer has no audio section');
            t.direction = 'sendrecv';
            await t.sender.replaceTrack(tone.track);
            await pc.setLocalDescription(await pc.createAnswer());
            await gathered(ms);
            return { sdp: pc.localDescription.sdp, context: ctx.state };
        },
        async talk(how) {
            if (!tone) throw new Error('not talking: answerTalking first');
            const t = audioTransceiver();
            if (how === 'tone' || how === 'silent') {
                tone.gain.gain.value = how === 'tone' ? 1 : 0;
                await t.sender.replaceTrack(tone.track);
            } else {
                await t.sender.replaceTrack(null);
            }
        },
        // The level (dBFS RMS over the last ~43 ms) of the audio received,
        // through WebAudio (an <audio> element plays the track, muted:
        // Chromium feeds a remote track into WebAudio only while played).
        async recvLevel() {
            if (!window.__rx) {
                const tr = stream.getAudioTracks()[0];
                if (!tr) return -200;
                const el = new Audio();
                el.muted = true;
                el.srcObject = new MediaStream([tr]);
                el.play().catch(() => {});
                const ac = new AudioContext();
                await ac.resume();
                const an = ac.createAnalyser();
                an.fftSize = 2048;
                ac.createMediaStreamSource(new MediaStream([tr])).connect(an);
                window.__rx = { ac, an, el };
                await new Promise((r) => setTimeout(r, 300));
            }
            const buf = new Float32Array(window.__rx.an.fftSize);
            window.__rx.an.getFloatTimeDomainData(buf);
            let sum = 0;
            for (const x of buf) sum += x * x;
            return 10 * Math.log10(sum / buf.length + 1e-20);
        },
        async stats() {
            const s = {
                framesDecoded: 0, framesReceived: 0, keyFramesDecoded: 0, videoPackets: 0,
                audioPackets: 0, audioSent: 0, packetsLost: 0, pliCount: 0, firCount: 0, nackCount: 0, frameWidth: 0, frameHeight: 0,
                connectionState: pc.connectionState, iceConnectionState: pc.iceConnectionState,
            };
            const report = await pc.getStats();
            report.forEach((r) => {
                if (r.type === 'outbound-rtp' && r.kind === 'audio') s.audioSent += r.packetsSent || 0;
                if (r.type !== 'inbound-rtp') return;
                s.packetsLost += r.packetsLost || 0;
                if (r.kind === 'video') {
                    s.framesDecoded += r.framesDecoded || 0;
                    s.framesReceived += r.framesReceived || 0;
                    s.keyFramesDecoded += r.keyFramesDecoded || 0;
                    s.videoPackets += r.packetsReceived || 0;
                    s.pliCount += r.pliCount || 0;
                    s.firCount += r.firCount || 0;
                    s.nackCount += r.nackCount || 0;
                    s.frameWidth = r.frameWidth || s.frameWidth;
                    s.frameHeight = r.frameHeight || s.frameHeight;
                } else if (r.kind === 'audio') {
                    s.audioPackets += r.packetsReceived || 0;
                    s.audioEnergy = (s.audioEnergy || 0) + (r.totalAudioEnergy || 0);
                    s.nackCount += r.nackCount || 0;
                }
            });
            return s;
        },
    };
    return typeof RTCPeerConnection;
}

/**
 * A viewer: a page holding one RTCPeerConnection.
 *   offerRecvOnly()  recvonly audio+video, resolves to the complete offer SDP
 *   offerPublish(hz) a constant tone of hz (WebAudio; 0: the fake microphone)
 *                    on a sendrecv audio transceiver, recvonly video: talk;
 *                    resolves to the offer
 *   offerAssistant(hz) the AI session's three sections: audio sendonly (a tone
 *                    of hz, or with 0 the fake microphone), audio recvonly,
 *                    video recvonly; resolves to the offer
 *   answer(sdp)      answers a remote offer, resolves to the complete answer
 *   setAnswer(sdp)   applies the remote answer to our offer
 *   restartIce()     restartIce() and a new offer on the same connection;
 *                    resolves to it once its new candidates are gathered
 *   answerTalking(sdp) answers with the audio transceiver sendrecv, sending a
 *                    440 Hz WebAudio tone (full scale); resolves to {sdp, context}
 *                    (the AudioContext's state: "running" unless autoplay is
 *                    blocked, see AUTOPLAY_ARGS)
 *   recvLevel()      the received audio's level now (dBFS RMS, WebAudio)
 *   talk(how)        "tone", "silent" (the tone at gain 0: packets go on) or
 *                    "none" (replaceTrack(null))
 *   requestKeyFrame() makes Chromium send a keyframe request (PLI) now, through
 *                    a pass-through encoded transform on the video receiver
 *   stats()          {framesDecoded, framesReceived, keyFramesDecoded, videoPackets,
 *                     audioPackets, audioEnergy (totalAudioEnergy received), audioSent, packetsLost, pliCount, firCount, nackCount, frameWidth,
 *                     frameHeight, connectionState, iceConnectionState}
 *   waitFor(pred, ms) polls stats() until pred(stats) holds; resolves to those
 *                     stats, rejects (with the last stats) after ms
 *   close()
 * The page is about:blank: RTCPeerConnection needs no secure origin; with
 * opts.url (a loopback http URL: a secure context) it is that page, where
 * getUserMedia exists (offerPublish(0), offerAssistant(0)).
 */
export async function newViewer(browser, opts = {}) {
    const gatherMs = opts.gatherMs || 5000;
    const context = await browser.newContext();
    const page = await context.newPage();
    if (opts.url) await page.goto(opts.url);
    const kind = await page.evaluate(pageSetup);
    if (kind !== 'function') throw new Error('no RTCPeerConnection in the page');
    const viewer = {
        page,
        offerRecvOnly: () => page.evaluate((ms) => window.__igw.offerRecvOnly(ms), gatherMs),
        restartIce: () => page.evaluate((ms) => window.__igw.restartIce(ms), gatherMs),
        recvLevel: () => page.evaluate(() => window.__igw.recvLevel()),
        offerPublish: (hz) => page.evaluate(([ms, f]) => window.__igw.offerPublish(ms, f), [gatherMs, hz]),
        offerAssistant: (hz) => page.evaluate(([ms, f]) => window.__igw.offerAssistant(ms, f), [gatherMs, hz]),
        answer: (sdp) => page.evaluate(([s, ms]) => window.__igw.answer(s, ms), [sdp, gatherMs]),
        setAnswer: (sdp) => page.evaluate((s) => window.__igw.setAnswer(s), sdp),
        answerTalking: (sdp) => page.evaluate(([s, ms]) => window.__igw.answerTalking(s, ms), [sdp, gatherMs]),
        talk: (how) => page.evaluate((h) => window.__igw.talk(h), how),
        requestKeyFrame: () => page.evaluate((ms) => window.__igw.requestKeyFrame(ms), gatherMs),
        stats: () => page.evaluate(() => window.__igw.stats()),
        async waitFor(pred, ms) {
            const deadline = Date.now() + ms;
            let last;
            for (;;) {
                last = await viewer.stats();
                if (pred(last)) return last;
                if (Date.now() >= deadline) {
                    const err = new Error(`condition not met within ${ms} ms; last stats ${JSON.stringify(last)}`);
                    err.stats = last;
                    throw err;
                }
                await sleep(100);
            }
        },
        async close() {
            await page.evaluate(() => window.__igw.pc.close()).catch(() => {});
            await context.close().catch(() => {});
        },
    };
    return viewer;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const children = new Set();
process.on('exit', () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/**
 * Runs cmd with args; its stdout is read as JSON lines, its stderr goes to
 * ours with a prefix and is kept (the last 1 MiB) for assertions.
 *   next(type, ms)  the next unread message (of that type if given; others
 *                   before it are dropped), rejects on timeout or exit
 *   send(obj)       writes one JSON line; sendRaw(line) writes it verbatim
 *   end()           closes its stdin
 *   kill(sig)       sends a signal
 *   exited          resolves to {code, signal}
 *   waitExit(ms)    exited, or rejects after ms
 *   stderr()        what it printed on stderr so far
 * Children still running when this process exits are killed.
 */
export function spawnLines(cmd, args = [], opts = {}) {
    const prefix = opts.prefix || `[${cmd.split('/').pop()}] `;
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env || process.env });
    children.add(child);
    const queue = [];
    const waiters = [];
    let errText = '';
    let exitInfo = null;
    const exited = new Promise((resolve) => {
        child.on('exit', (code, signal) => {
            exitInfo = { code, signal };
            children.delete(child);
            resolve(exitInfo);
            for (const w of waiters.splice(0)) w.fail(new Error(`${cmd} exited (${code ?? signal}) while awaited`));
        });
    });
    child.on('error', (e) => {
        for (const w of waiters.splice(0)) w.fail(e);
    });
    child.stdin.on('error', () => {}); // EPIPE after the child is gone: surfaced by exit
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
        let msg;
        try {
            msg = JSON.parse(line);
        } catch {
            msg = { type: '_raw', line };
        }
        queue.push(msg);
        deliver();
    });
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
        errText += line + '\n';
        if (errText.length > 1 << 20) errText = errText.slice(-(1 << 20));
        if (!opts.quiet) process.stderr.write(prefix + line + '\n');
    });
    function deliver() {
        for (let i = 0; i < waiters.length; ) {
            const w = waiters[i];
            let idx = -1;
            while (queue.length) {
                if (!w.type || queue[0].type === w.type) {
                    idx = 0;
                    break;
                }
                queue.shift();
            }
            if (idx < 0) {
                i++;
                continue;
            }
            waiters.splice(i, 1);
            w.ok(queue.shift());
        }
    }
    return {
        child,
        pid: child.pid,
        next(type, ms = 10000) {
            return new Promise((resolve, reject) => {
                const t = setTimeout(() => {
                    const i = waiters.indexOf(w);
                    if (i >= 0) waiters.splice(i, 1);
                    reject(new Error(`no ${type || 'message'} from ${cmd} within ${ms} ms`));
                }, ms);
                const w = {
                    type,
                    ok: (m) => (clearTimeout(t), resolve(m)),
                    fail: (e) => (clearTimeout(t), reject(e)),
                };
                waiters.push(w);
                deliver();
                const i = waiters.indexOf(w);
                if (exitInfo && i >= 0) {
                    waiters.splice(i, 1);
                    w.fail(new Error(`${cmd} already exited (${exitInfo.code ?? exitInfo.signal})`));
                }
            });
        },
        send(obj) {
            child.stdin.write(JSON.stringify(obj) + '\n');
        },
        sendRaw(line) {
            child.stdin.write(line.endsWith('\n') ? line : line + '\n');
        },
        end() {
            child.stdin.end();
        },
        kill(sig = 'SIGTERM') {
            if (!exitInfo) child.kill(sig);
        },
        exited,
        waitExit(ms) {
            return Promise.race([
                exited,
                sleep(ms).then(() => {
                    if (!exitInfo) throw new Error(`${cmd} still running after ${ms} ms`);
                    return exitInfo;
                }),
            ]);
        },
        stderr: () => errText,
    };
}

/** A non-browser WebRTC talk member: tests/media/aiortc_talker.py (aiortc,
 * Debian python3-aiortc) sending a continuous tone of hz on a sendrecv audio
 * track, video recvonly. Resolves once its offer is gathered:
 *   offer            its offer SDP
 *   setAnswer(sdp)   applies the answer
 *   tone(on)         the tone, or digital silence (its packets go on)
 *   stats()          {sent (RTP packets), recvAudio, recvVideo (frames), state}
 *   close()          closes the connection and waits for the process */
export async function aiortcTalker(hz, prefix = '[aiortc] ') {
    const path = new URL('./aiortc_talker.py', import.meta.url).pathname;
    const p = spawnLines('/usr/bin/python3', [path, '--hz', String(hz)], { prefix });
    const offer = (await p.next('offer', 30000)).sdp;
    const ask = async (obj, type = 'ok') => (p.send(obj), p.next(type, 10000));
    return {
        offer,
        setAnswer: (sdp) => ask({ answer: sdp }),
        tone: (on) => ask({ tone: on }),
        stats: () => ask({ stats: true }, 'stats'),
        async close() {
            p.send({ close: true });
            await p.waitExit(10000).catch(() => p.kill('SIGKILL'));
        },
    };
}

/** igw-media-host (tests/media/host.c) started as `bin args`: its replies
 * and its events come on one stream. call(req, ms) sends a request and
 * resolves to its reply; waitEvent(pred, ms) resolves to the first event
 * pred accepts, or null after ms; host is the process (end, waitExit). */
export function mediaHost(bin, args, prefix = '[host] ') {
    const host = spawnLines(bin, args, { prefix });
    const events = [];
    const pending = [];
    async function pump(ms) {
        const m = await host.next(undefined, ms);
        if (m.type === 'event') events.push(m);
        else pending.push(m);
    }
    async function call(req, ms = 10000) {
        host.send(req);
        const deadline = Date.now() + ms;
        while (!pending.length) await pump(Math.max(1, deadline - Date.now()));
        return pending.shift();
    }
    async function waitEvent(pred, ms) {
        const deadline = Date.now() + ms;
        for (;;) {
            const hit = events.find(pred);
            if (hit) return hit;
            const left = deadline - Date.now();
            if (left <= 0) return null;
            await pump(left).catch(() => {});
        }
    }
    return { host, call, waitEvent };
}

/** Counts checks the house way; `done(name)` prints the closing line and exits. */
export class Checker {
    constructor() {
        this.n = 0;
        this.failed = 0;
    }
    check(cond, what) {
        this.n++;
        if (!cond) {
            this.failed++;
            console.error(`FAIL: ${what}`);
        }
        return !!cond;
    }
    done(name) {
        if (this.failed) {
            console.log(`${name}: ${this.n} checks, ${this.failed} failures`);
            process.exit(1);
        }
        console.log(`${name}: ${this.n} checks passed`);
        process.exit(0);
    }
}
