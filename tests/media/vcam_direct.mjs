// vcam_direct.mjs - igw-vcam alone against Chromium: the camera (with
// --speaker) offers, Chromium answers, video recvonly and audio sendrecv, and
// within 5 s of the answer Chromium must have decoded video (including a
// keyframe the camera only sends on request: its periodic interval is 10 s)
// and received audio. Talk: Chromium sends a 440 Hz tone, the camera's
// --speaker-log must show it loud, then quiet when the tone goes to gain 0,
// its log the packets stopping when the track goes; the camera's mic reaches
// Chromium meanwhile. Then a renegotiation, the exits (stdin EOF, SIGTERM, a
// rejected answer, bad options), and the offer of a camera without --speaker.
//
//   node vcam_direct.mjs BUILD/igw-vcam      (run by vcam_direct.sh)
//
// Env: VCAM_SAVE_OFFER=PATH writes the first offer there (the corpus file
// tests/media/sdp_corpus/vcam_offer.sdp was made that way).
import { writeFileSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, newViewer, spawnLines, Checker, sleep, AUTOPLAY_ARGS } from './lib.mjs';

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

// The offer as the igw media core will see it. audioDir: the audio section's
// direction (sendrecv with --speaker, sendonly without).
function checkOffer(sdp, gen, audioDir = 'sendrecv') {
    const all = lines(sdp);
    const video = section(sdp, 'video');
    const audio = section(sdp, 'audio');
    c.check(sdp.includes('\r\n'), `offer ${gen}: CRLF line ends survived the JSON round trip`);
    c.check(video.length > 0 && audio.length > 0, `offer ${gen}: one video and one audio section`);
    const group = all.find((l) => l.startsWith('a=group:BUNDLE '));
    const mids = [...video, ...audio].filter((l) => l.startsWith('a=mid:')).map((l) => l.slice(6));
    c.check(group && mids.length === 2 && mids.every((m) => group.split(' ').includes(m)),
        `offer ${gen}: both mids in one BUNDLE group (${group})`);
    c.check(video.includes('a=sendonly') && audio.includes(`a=${audioDir}`),
        `offer ${gen}: video sendonly, audio ${audioDir} (${audio.filter((l) => /^a=(send|recv|inactive)/.test(l))})`);
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

// The speaker log's lines written at or after since (Unix ms); each must be
// {"at_ms","rms_db","peak_db"} with finite numbers (-inf is -120).
const tmp = mkdtempSync(join(tmpdir(), 'vcam-direct-'));
const spkLog = join(tmp, 'speaker.jsonl');
let spkBad = 0;
function speakerLines(since = 0) {
    let text = '';
    try {
        text = readFileSync(spkLog, 'utf8');
    } catch {
        return [];
    }
    const out = [];
    for (const l of text.split('\n')) {
        if (!l) continue;
        let o;
        try {
            o = JSON.parse(l);
        } catch {
            o = null;
        }
        const ok = o && Object.keys(o).join() === 'at_ms,rms_db,peak_db' &&
            [o.at_ms, o.rms_db, o.peak_db].every(Number.isFinite) && o.rms_db >= -120 && o.peak_db <= 0;
        if (!ok) {
            if (spkBad++ < 3) console.error(`${NAME}: bad speaker log line: ${l}`);
            continue;
        }
        if (o.at_ms >= since) out.push(o);
    }
    return out;
}
// Polls the speaker log until pred holds for a line written since; that line, or null after ms.
async function speakerWait(since, pred, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
        const hit = speakerLines(since).find(pred);
        if (hit || Date.now() >= deadline) return hit || null;
        await sleep(50);
    }
}
const fmt = (ls) => ls.length ? `${ls.length} lines, rms ${Math.min(...ls.map((o) => o.rms_db)).toFixed(1)}..` +
    `${Math.max(...ls.map((o) => o.rms_db)).toFixed(1)} dB, peak max ${Math.max(...ls.map((o) => o.peak_db)).toFixed(1)} dB` : 'no lines';

const started = Date.now();
const browser = await launch({ args: AUTOPLAY_ARGS });
const cams = [];
try {
    // ---- the main session ----
    const viewer = await newViewer(browser);
    const cam = spawnLines(VCAM, ['--key-int', '10', '--verbose', '--speaker', '--speaker-log', spkLog],
        { prefix: '[vcam] ' });
    cams.push(cam);
    const offer = await cam.next('offer', 10000);
    c.check(typeof offer.sdp === 'string', 'the camera sent {"type":"offer","sdp":...}');
    checkOffer(offer.sdp, 1);
    if (process.env.VCAM_SAVE_OFFER) writeFileSync(process.env.VCAM_SAVE_OFFER, offer.sdp);

    // Unknown message types are ignored, not fatal.
    cam.send({ type: 'hello', sdp: 'x' });
    const talking = await viewer.answerTalking(offer.sdp);
    const answer = talking.sdp;
    c.check(lines(answer).some((l) => l.startsWith('a=candidate:')), 'Chromium answered with its candidates inside');
    c.check(section(answer, 'audio').includes('a=sendrecv') && talking.context === 'running',
        `Chromium answered audio sendrecv, its tone's AudioContext ${talking.context}`);
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

    // ---- talk: what Chromium sends is played by the camera's speaker ----
    const tTalk = Date.now();
    const loud = await speakerWait(tTalk, (o) => o.rms_db > -35, 5000);
    console.error(`${NAME}: speaker, tone: first loud line ${loud ? loud.at_ms - tTalk : '-'} ms after the check began; ` +
        `${fmt(speakerLines(tTalk))}; first line: ${JSON.stringify(speakerLines(0)[0])}`);
    c.check(loud, `the speaker log shows the tone above -35 dB within 5 s (${JSON.stringify(loud)})`);
    await sleep(500);
    const toneLines = speakerLines(Date.now() - 500);
    c.check(toneLines.length >= 5 && toneLines.every((o) => o.rms_db > -35),
        `the tone stays loud, about 20 lines a second (${fmt(toneLines)})`);
    c.check(/vcam: speaker: first packet/.test(cam.stderr()) && /vcam: speaker: sound \(rms/.test(cam.stderr()),
        'the camera logged the first speaker packet and the sound');

    // The tone at gain 0: packets go on, the level falls to silence.
    const micBefore = (await viewer.stats()).audioPackets;
    await viewer.talk('silent');
    const tSilent = Date.now();
    const quiet = await speakerWait(tSilent, (o) => o.rms_db < -60, 3000);
    console.error(`${NAME}: speaker, gain 0: quiet line ${quiet ? quiet.at_ms - tSilent : '-'} ms after; ${fmt(speakerLines(tSilent))}`);
    c.check(quiet, `gain 0: the speaker log falls below -60 dB within 3 s (${JSON.stringify(quiet)})`);
    await sleep(500);
    const quietLines = speakerLines(Date.now() - 400);
    c.check(quietLines.length >= 3 && quietLines.every((o) => o.rms_db < -60),
        `gain 0: it stays below -60 dB, packets still coming (${fmt(quietLines)})`);
    c.check(/vcam: speaker: silent \(rms/.test(cam.stderr()), 'the camera logged that the speaker went silent');
    const micDuring = (await viewer.stats()).audioPackets;
    c.check(micDuring > micBefore + 20, `the camera's mic reaches Chromium meanwhile (${micBefore} -> ${micDuring} packets)`);

    // No track at all: the packets stop, the camera says so.
    await viewer.talk('none');
    const tNone = Date.now();
    let stopped = false;
    while (!stopped && Date.now() - tNone < 4000) {
        stopped = /vcam: speaker: silent \(no packets/.test(cam.stderr());
        if (!stopped) await sleep(100);
    }
    c.check(stopped, `no track: the camera logged that speaker packets stopped within 4 s (${Date.now() - tNone} ms)`);
    const afterNone = speakerLines(Date.now() - 500);
    c.check(afterNone.length === 0, `no track: nothing more in the speaker log (${fmt(afterNone)})`);

    // The tone again.
    await viewer.talk('tone');
    const tAgain = Date.now();
    const again = await speakerWait(tAgain, (o) => o.rms_db > -35, 5000);
    c.check(again, `the tone again: above -35 dB within 5 s (${again ? again.at_ms - tAgain : '-'} ms)`);

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
    const tRe = Date.now();
    await sleep(500);
    const reLines = speakerLines(tRe);
    c.check(reLines.length >= 5 && reLines.every((o) => o.rms_db > -35), `the tone plays on after renegotiation (${fmt(reLines)})`);
    c.check(spkBad === 0, `every speaker log line is {"at_ms","rms_db","peak_db"} with finite numbers (${spkBad} bad)`);

    // ---- stdin EOF: a clean exit 0 ----
    cam.end();
    const ex = await cam.waitExit(5000).catch((e) => ({ code: e.message }));
    c.check(ex.code === 0, `exit 0 on stdin EOF (${ex.code ?? ex.signal})`);
    c.check(/vcam: stopping: signaling closed/.test(cam.stderr()), 'the camera said why it stopped');
    await viewer.close();

    // ---- SIGTERM: exit 0 ----
    const cam2 = spawnLines(VCAM, [], { prefix: '[vcam2] ' });
    cams.push(cam2);
    // Without --speaker the camera only sends, as before talk.
    checkOffer((await cam2.next('offer', 10000)).sdp, 'without --speaker', 'sendonly');
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
    for (const args of [['--width', '641'], ['--fps', '0'], ['--address', 'nowhere'], ['--signal', 'mqtt'], ['--bogus'],
        ['--speaker-log', join(tmp, 'no/such/dir')], ['--no-speaker']]) {
        const bad = spawnLines(VCAM, args, { quiet: true });
        const exb = await bad.waitExit(5000).catch((e) => ({ code: e.message }));
        c.check(exb.code === 2 && /vcam: error: /.test(bad.stderr()), `exit 2 with a message for ${args.join(' ')} (${exb.code})`);
    }
} catch (e) {
    c.check(false, `unexpected: ${e.stack || e}`);
} finally {
    for (const cam of cams) cam.kill('SIGKILL');
    await browser.close().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
}
// Every step above waits with its own bound; the total is reported, not
// asserted (a busy machine is slower, not wrong).
console.error(`${NAME}: the whole run took ${((Date.now() - started) / 1000).toFixed(1)} s`);
c.done(NAME);
