// vcam_direct.mjs - igw-vcam alone against Chromium: the camera offers,
// Chromium answers recvonly, and within 5 s of the answer Chromium must have
// decoded video (including a keyframe the camera only sends on request: its
// periodic interval is 10 s) and received audio. Then a renegotiation, the
// exits (stdin EOF, SIGTERM, a rejected answer, bad options).
//
//   node vcam_direct.mjs BUILD/igw-vcam      (run by vcam_direct.sh)
//
// Env: VCAM_SAVE_OFFER=PATH writes the first offer there (the corpus file
// tests/media/sdp_corpus/vcam_offer.sdp was made that way).
import { writeFileSync } from 'node:fs';
import { launch, newViewer, spawnLines, Checker, sleep } from './lib.mjs';

const NAME = 'vcam_direct';
const VCAM = process.argv[2];
if (!VCAM) {
    console.error(`usage: ${NAME}.mjs PATH/TO/igw-vcam`);
    process.exit(2);
}
const c = new Checker();
const lines = (sdp) => sdp.split(/\r?\n/).filter((l) => l);
const section = (sdp, kind) => {
    const m = sdp.split(/\r?\n(?=m=)/).find((s) => s.startsWith(`m=${kind} `));
    return m ? lines(m) : [];
};

// The offer as the igw media core will see it.
function checkOffer(sdp, gen) {
    const all = lines(sdp);
    const video = section(sdp, 'video');
    const audio = section(sdp, 'audio');
    c.check(sdp.includes('\r\n'), `offer ${gen}: CRLF line ends survived the JSON round trip`);
    c.check(video.length > 0 && audio.length > 0, `offer ${gen}: one video and one audio section`);
    const group = all.find((l) => l.startsWith('a=group:BUNDLE '));
    const mids = [...video, ...audio].filter((l) => l.startsWith('a=mid:')).map((l) => l.slice(6));
    c.check(group && mids.length === 2 && mids.every((m) => group.split(' ').includes(m)),
        `offer ${gen}: both mids in one BUNDLE group (${group})`);
    c.check(video.includes('a=sendonly') && audio.includes('a=sendonly'), `offer ${gen}: both sections sendonly`);
    c.check(video.includes('a=rtcp-mux') && audio.includes('a=rtcp-mux'), `offer ${gen}: rtcp-mux`);
    c.check(/^a=rtpmap:\d+ H264\/90000$/m.test(video.join('\n')), `offer ${gen}: H264/90000`);
    c.check(/^a=fmtp:\d+ .*packetization-mode=1/m.test(video.join('\n')) &&
            /profile-level-id=42(c0|e0)/.test(video.join('\n')),
        `offer ${gen}: H264 constrained baseline, packetization-mode=1`);
    c.check(/^a=rtcp-fb:\d+ nack pli$/m.test(video.join('\n')), `offer ${gen}: video offers PLI`);
    c.check(/^a=rtpmap:\d+ opus\/48000\/2$/im.test(audio.join('\n')), `offer ${gen}: opus/48000/2`);
    c.check(all.some((l) => l.startsWith('a=fingerprint:sha-256 ')), `offer ${gen}: a sha-256 fingerprint`);
    c.check(all.some((l) => l === 'a=setup:actpass'), `offer ${gen}: setup:actpass`);
    const cands = all.filter((l) => l.startsWith('a=candidate:'));
    c.check(cands.length > 0, `offer ${gen}: candidates inside (non-trickle)`);
    c.check(cands.every((l) => / 127\.0\.0\.1 \d+ typ host/.test(l) && / udp /i.test(l)),
        `offer ${gen}: only UDP host candidates on 127.0.0.1: ${cands.join(' | ')}`);
}

// A JSON line with the answer written the long way round: every '/' as "\/"
// and every '=' as "\u003d", so the camera's unescaper is exercised.
const answerLine = (sdp) =>
    JSON.stringify({ type: 'answer', sdp }).replace(/\//g, '\\/').replace(/=/g, '\\u003d');

const started = Date.now();
const browser = await launch();
const cams = [];
try {
    // ---- the main session ----
    const viewer = await newViewer(browser);
    const cam = spawnLines(VCAM, ['--key-int', '10', '--verbose'], { prefix: '[vcam] ' });
    cams.push(cam);
    const offer = await cam.next('offer', 10000);
    c.check(typeof offer.sdp === 'string', 'the camera sent {"type":"offer","sdp":...}');
    checkOffer(offer.sdp, 1);
    if (process.env.VCAM_SAVE_OFFER) writeFileSync(process.env.VCAM_SAVE_OFFER, offer.sdp);

    // Unknown message types are ignored, not fatal.
    cam.send({ type: 'hello', sdp: 'x' });
    const answer = await viewer.answer(offer.sdp);
    c.check(lines(answer).some((l) => l.startsWith('a=candidate:')), 'Chromium answered with its candidates inside');
    cam.sendRaw(answerLine(answer));
    const t0 = Date.now();
    let s;
    try {
        // frameWidth and connectionState can trail the first decoded frame by a poll.
        s = await viewer.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0 && x.keyFramesDecoded >= 1 &&
            x.frameWidth > 0 && x.connectionState === 'connected', 5000);
    } catch (e) {
        s = e.stats;
        console.error(e.message);
    }
    console.error(`${NAME}: media after ${Date.now() - t0} ms: ${JSON.stringify(s)}`);
    c.check(s && s.framesDecoded > 0, `frames decoded within 5 s (${s && s.framesDecoded})`);
    c.check(s && s.audioPackets > 0, `audio packets within 5 s (${s && s.audioPackets})`);
    c.check(s && s.keyFramesDecoded >= 1, `a keyframe decoded within 5 s (${s && s.keyFramesDecoded})`);
    c.check(s && s.frameWidth === 640 && s.frameHeight === 360, `640x360 decoded (${s && s.frameWidth}x${s && s.frameHeight})`);
    c.check(s && s.connectionState === 'connected', `Chromium connected (${s && s.connectionState})`);
    const err = cam.stderr();
    c.check(/unknown message type "hello", ignored/.test(err), 'the camera ignored an unknown message type');
    c.check(/vcam: ice state (connected|completed)/.test(err), 'the camera logged its ICE state connected');
    c.check(/vcam: peer connection state connected/.test(err), 'the camera logged its peer connection connected');

    // ---- a keyframe on request: the periodic one is 10 s away ----
    const k0 = s ? s.keyFramesDecoded : 0;
    const asked0 = s ? s.pliCount + s.firCount : 0;
    await viewer.requestKeyFrame();
    const tk = Date.now();
    const sk = await viewer.waitFor((x) => x.keyFramesDecoded > k0, 2000).catch((e) => e.stats);
    console.error(`${NAME}: keyframe ${Date.now() - tk} ms after the request: ${JSON.stringify(sk)}`);
    c.check(sk && sk.pliCount + sk.firCount > asked0, `Chromium sent a PLI/FIR (pli ${sk && sk.pliCount}, fir ${sk && sk.firCount})`);
    c.check(sk && sk.keyFramesDecoded > k0, `a new keyframe decoded within 2 s of the request (${k0} -> ${sk && sk.keyFramesDecoded})`);
    c.check(/vcam: keyframe requested/.test(cam.stderr()), 'the encoder saw the request (GstForceKeyUnit upstream)');

    // ---- renegotiation: a new offer on the same transport, media goes on ----
    cam.send({ type: 'renegotiate' });
    const offer2 = await cam.next('offer', 5000);
    checkOffer(offer2.sdp, 2);
    const answer2 = await viewer.answer(offer2.sdp);
    cam.send({ type: 'answer', sdp: answer2 });
    const before = (await viewer.stats()).framesDecoded;
    const s2 = await viewer.waitFor((x) => x.framesDecoded >= before + 15, 3000).catch((e) => e.stats);
    c.check(s2 && s2.framesDecoded >= before + 15, `frames keep coming after renegotiation (${before} -> ${s2 && s2.framesDecoded})`);
    c.check(/vcam: answer 2 applied/.test(cam.stderr()), 'the camera applied the second answer');

    // ---- stdin EOF: a clean exit 0 ----
    cam.end();
    const ex = await cam.waitExit(5000).catch((e) => ({ code: e.message }));
    c.check(ex.code === 0, `exit 0 on stdin EOF (${ex.code ?? ex.signal})`);
    c.check(/vcam: stopping: signaling closed/.test(cam.stderr()), 'the camera said why it stopped');
    await viewer.close();

    // ---- SIGTERM: exit 0 ----
    const cam2 = spawnLines(VCAM, [], { prefix: '[vcam2] ' });
    cams.push(cam2);
    await cam2.next('offer', 10000);
    cam2.kill('SIGTERM');
    const ex2 = await cam2.waitExit(5000).catch((e) => ({ code: e.message }));
    c.check(ex2.code === 0, `exit 0 on SIGTERM (${ex2.code ?? ex2.signal})`);

    // ---- rejected answers: exit 1 with the reason ----
    const rejected = [
        ['not an SDP', () => 'v=0\r\nthis is not a description\r\n', /not an SDP with media/],
        ['no fingerprint', (a) => a.replace(/a=fingerprint:[^\r\n]*\r\n/g, ''), /fingerprint/i],
    ];
    for (const [what, mangle, reason] of rejected) {
        const cam3 = spawnLines(VCAM, [], { prefix: '[vcam3] ', quiet: true });
        cams.push(cam3);
        const o3 = await cam3.next('offer', 10000);
        const v3 = await newViewer(browser);
        const a3 = await v3.answer(o3.sdp);
        cam3.send({ type: 'answer', sdp: mangle(a3) });
        const ex3 = await cam3.waitExit(5000).catch((e) => ({ code: e.message }));
        c.check(ex3.code === 1, `exit 1 on an answer with ${what} (${ex3.code ?? ex3.signal})`);
        const why = cam3.stderr().split('\n').find((l) => l.includes('vcam: error: remote description rejected'));
        c.check(why && reason.test(why), `the camera said why the answer was rejected (${why})`);
        await v3.close();
    }

    // ---- bad input: malformed JSON and bad options ----
    const cam4 = spawnLines(VCAM, [], { prefix: '[vcam4] ', quiet: true });
    cams.push(cam4);
    await cam4.next('offer', 10000);
    cam4.sendRaw('{"type":"answer","sdp":"v=0\\x"}');
    const ex4 = await cam4.waitExit(5000).catch((e) => ({ code: e.message }));
    c.check(ex4.code === 1 && /malformed JSON/.test(cam4.stderr()), `exit 1 on malformed JSON (${ex4.code})`);
    const cam5 = spawnLines(VCAM, [], { prefix: '[vcam5] ', quiet: true });
    cams.push(cam5);
    await cam5.next('offer', 10000);
    cam5.sendRaw(`{"type":"answer","sdp":"${'a'.repeat(70000)}"}`);
    const ex5 = await cam5.waitExit(5000).catch((e) => ({ code: e.message }));
    c.check(ex5.code === 1 && /line longer than 65536 bytes/.test(cam5.stderr()), `exit 1 on a 70 kB line (${ex5.code})`);
    for (const args of [['--width', '641'], ['--fps', '0'], ['--address', 'nowhere'], ['--signal', 'mqtt'], ['--bogus']]) {
        const bad = spawnLines(VCAM, args, { quiet: true });
        const exb = await bad.waitExit(5000).catch((e) => ({ code: e.message }));
        c.check(exb.code === 2 && /vcam: error: /.test(bad.stderr()), `exit 2 with a message for ${args.join(' ')} (${exb.code})`);
    }
} catch (e) {
    c.check(false, `unexpected: ${e.stack || e}`);
} finally {
    for (const cam of cams) cam.kill('SIGKILL');
    await browser.close().catch(() => {});
}
// Every step above waits with its own bound; the total is reported, not
// asserted (a busy machine is slower, not wrong).
console.error(`${NAME}: the whole run took ${((Date.now() - started) / 1000).toFixed(1)} s`);
c.done(NAME);
