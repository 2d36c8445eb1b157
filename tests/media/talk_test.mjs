// talk_test.mjs HOST TALKCAM - talk through the media core with real peers: a
// GStreamer camera with a speaker (gst_talkcam: audio sendrecv, what it hears
// decoded and measured by `level`) publishes to igw-media-host; headless
// Chromium viewers publish a WebAudio tone. The gate (op publish) and the
// floor decide what the camera hears. Run by talk_test.sh; prints
// "talk_test: N checks passed" or exits non-zero.
import { launch, newViewer, sleep, spawnLines, mediaHost, Checker } from './lib.mjs';

const [HOST, TALKCAM] = process.argv.slice(2);
const ADDR = process.env.IGW_NETNS_ADDR || '127.0.0.1';
const LOUD_DBFS = -35; // a tone at half scale decodes near -9 dBFS; silence has no packets at all
const c = new Checker();

// ---- the host: replies and events on one stream ----
const { host, call, waitEvent } = mediaHost(HOST, ['--address', ADDR]);
const stats = (id) => call({ op: 'stats', id });
const publish = (id, allowed) => call({ op: 'publish', id, rev: 1, allowed });

// ---- the camera: its latest stats line ----
let cam, camLast = null;
async function camStats() {
    // Stats come every 100 ms: take the newest one that arrived after now.
    const t = Date.now();
    for (;;) {
        const m = await cam.next('stats', 2000);
        camLast = m;
        if (Date.now() - t >= 90) return m;
    }
}

function audioSection(sdp) {
    const parts = sdp.split(/\r?\n(?=m=)/);
    return parts.find((p) => p.startsWith('m=audio')) || '';
}

async function publisher(browser, id, hz) {
    const v = await newViewer(browser);
    const offer = await v.offerPublish(hz);
    const r = await call({ op: 'viewer', source: 'cam', id, rev: 1, sdp: offer });
    if (!c.check(r.ok, `${id}: answer to a publishing offer (${r.error || ''})`)) return v;
    const a = audioSection(r.sdp);
    c.check(/a=sendrecv/.test(a), `${id}: audio answered sendrecv: we receive its tone and send the camera's audio`);
    c.check(/a=extmap:\d+ urn:ietf:params:rtp-hdrext:ssrc-audio-level/.test(a), `${id}: the audio-level extension accepted`);
    await v.setAnswer(r.sdp);
    const s = await v.waitFor((x) => x.framesDecoded > 0 && x.audioPackets > 0 && x.audioSent > 0, 8000).catch((e) => e.stats);
    c.check(s && s.framesDecoded > 0 && s.audioSent > 0, `${id}: plays video and sends audio (${JSON.stringify(s)})`);
    return v;
}

async function main() {
    // ---- the camera with a speaker ----
    cam = spawnLines(TALKCAM, ['--address', ADDR], { prefix: '[talkcam] ' });
    const offer = await cam.next('offer', 15000);
    c.check(/a=sendrecv/.test(audioSection(offer.sdp)), 'the camera offers audio sendrecv');
    const src = await call({ op: 'source', id: 'cam', rev: 1, sdp: offer.sdp });
    c.check(src.ok, `camera offer answered (${src.error || ''})`);
    const sa = audioSection(src.sdp || '');
    c.check(/a=sendrecv/.test(sa) && /a=ssrc:\d+ cname:igw/.test(sa), 'camera audio answered sendrecv with our talkback SSRC');
    cam.send({ type: 'answer', sdp: src.sdp });
    c.check(!!(await waitEvent((e) => e.id === 'cam' && e.event === 'dtls-connected', 10000)), 'camera DTLS connected');
    c.check(!!(await waitEvent((e) => e.id === 'cam' && e.event === 'first-packet', 5000)), 'camera media arrives');

    const browser = await launch({ args: ['--autoplay-policy=no-user-gesture-required'] });
    const a = await publisher(browser, 'tA', 440);

    // ---- gate closed (the default): the camera hears nothing ----
    await sleep(1500);
    let [ha, hc, k] = [await stats('tA'), await stats('cam'), await camStats()];
    c.check(ha.publish_allowed === false, 'tA: not allowed by default');
    c.check(ha.talk_in > 20 && ha.talk_gated === ha.talk_in && ha.talk_forwarded === 0,
        `tA: its audio arrives and is gated (in ${ha.talk_in}, gated ${ha.talk_gated}, forwarded ${ha.talk_forwarded})`);
    c.check(hc.talkback_out === 0 && k.rtp === 0, `gate closed: no talkback packet reaches the camera (${hc.talkback_out}, camera ${k.rtp})`);

    // ---- gate open: the tone is loud at the camera ----
    let r = await publish('tA', true);
    c.check(r.ok, `tA: gate opened (${r.error || ''})`);
    const openedAt = Date.now();
    let heard = null;
    while (Date.now() - openedAt < 4000) {
        k = await camStats();
        if (k.rtp > 0 && k.levels > 3 && k.rms > LOUD_DBFS) {
            heard = k;
            break;
        }
    }
    c.check(!!heard, `gate open: the camera hears the tone above ${LOUD_DBFS} dBFS (${JSON.stringify(k)})`);
    if (heard) console.error(`talk_test: tone heard at the camera ${Date.now() - openedAt} ms after the gate opened, rms ${heard.rms} dBFS`);
    await sleep(1000);
    k = await camStats();
    c.check(k.rms > LOUD_DBFS, `the tone stays loud (${k.rms} dBFS)`);
    ha = await stats('tA');
    c.check(ha.publish_allowed === true && ha.talk_forwarded > 40, `tA: forwarded (${ha.talk_forwarded})`);

    // ---- gate closed again: silence; how long after the call the last packet went ----
    r = await publish('tA', false);
    c.check(r.ok, 'tA: gate closed');
    const closedAt = Date.now();
    let s1 = await a.stats();
    await sleep(500); // what was in flight has played out at the camera
    const k1 = await camStats();
    await sleep(1000);
    const k2 = await camStats();
    let s2 = await a.stats();
    ha = await stats('tA');
    hc = await stats('cam');
    c.check(k2.rtp === k1.rtp, `gate closed: the camera hears nothing more (${k1.rtp} -> ${k2.rtp} packets)`);
    c.check(ha.talk_last_us > 0 && ha.talk_last_us <= r.after_us,
        `no packet forwarded after the gate call returned (last ${ha.talk_last_us}, call returned ${r.after_us})`);
    console.error(`talk_test: mute to last forwarded packet: ${((ha.talk_last_us - r.before_us) / 1000).toFixed(1)} ms ` +
        `(the call took ${((r.after_us - r.before_us) / 1000).toFixed(2)} ms)`);
    c.check(s2.framesDecoded - s1.framesDecoded >= 10, `tA: video goes on while gated (${s1.framesDecoded} -> ${s2.framesDecoded})`);
    c.check(s2.audioPackets > s1.audioPackets, 'tA: the camera\'s audio goes on while gated');
    c.check(ha.talk_gated > 0 && ha.talk_in >= ha.talk_forwarded + ha.talk_gated + ha.talk_no_floor,
        `tA: counters add up (in ${ha.talk_in} >= forwarded ${ha.talk_forwarded} + gated ${ha.talk_gated} + no floor ${ha.talk_no_floor})`);
    c.check(Date.now() - closedAt < 5000, 'gate checks in time');

    // ---- two talkers: one holds the floor; when its gate closes the other is heard ----
    const b = await publisher(browser, 'tB', 660);
    r = await publish('tA', true);
    await sleep(300);
    r = await publish('tB', true);
    c.check(r.ok, 'tB: gate opened');
    await sleep(1000);
    const [a1, b1] = [await stats('tA'), await stats('tB')];
    await sleep(1000);
    const [a2, b2] = [await stats('tA'), await stats('tB')];
    const da = a2.talk_forwarded - a1.talk_forwarded, db = b2.talk_forwarded - b1.talk_forwarded;
    c.check(da > 30 && db === 0, `the floor is tA's, who spoke first (forwarded in 1 s: tA ${da}, tB ${db})`);
    c.check(b2.talk_no_floor > b1.talk_no_floor, `tB: its packets wait for the floor (${b1.talk_no_floor} -> ${b2.talk_no_floor})`);
    k = await camStats();
    c.check(k.rms > LOUD_DBFS, `the camera hears one tone (${k.rms} dBFS)`);
    const bBefore = (await stats('tB')).talk_forwarded;
    r = await publish('tA', false);
    const t0 = Date.now();
    let switched = -1;
    while (Date.now() - t0 < 2000) {
        if ((await stats('tB')).talk_forwarded > bBefore) {
            switched = Date.now() - t0;
            break;
        }
        await sleep(20);
    }
    c.check(switched >= 0 && switched <= 500, `tB heard within 0.5 s of tA's gate closing (${switched} ms)`);
    console.error(`talk_test: floor to tB ${switched} ms after tA's gate closed`);
    await sleep(800);
    k = await camStats();
    c.check(k.rms > LOUD_DBFS, `the camera hears tB (${k.rms} dBFS)`);
    const fa = (await stats('tA')).talk_forwarded;
    await sleep(500);
    c.check((await stats('tA')).talk_forwarded === fa, 'tA: nothing forwarded while gated');

    // ---- tB leaves: tA (allowed again) takes the floor ----
    r = await publish('tA', true);
    await call({ op: 'close', id: 'tB' });
    const fa2 = (await stats('tA')).talk_forwarded;
    await sleep(600);
    c.check((await stats('tA')).talk_forwarded > fa2, 'tA takes the floor when tB leaves');
    r = await publish('tA', false);
    await sleep(300);

    // ---- one continuous stream at the camera, counters consistent ----
    k = await camStats();
    c.check(k.ssrcs === 1 && k.gaps === 0 && k.ts_back === 0,
        `the camera received one continuous stream across the switches (ssrcs ${k.ssrcs}, seq gaps ${k.gaps}, ts back ${k.ts_back}, ${k.rtp} packets)`);
    ha = await stats('tA');
    hc = await stats('cam');
    c.check(hc.talkback_out >= ha.talk_forwarded && hc.talkback_out > 0 && k.rtp <= hc.talkback_out && k.rtp >= hc.talkback_out - 5,
        `talkback counters agree (cam talkback_out ${hc.talkback_out}, tA forwarded ${ha.talk_forwarded}, camera received ${k.rtp})`);
    c.check(ha.talk_in >= ha.talk_forwarded + ha.talk_gated + ha.talk_no_floor, 'tA: counters add up at the end');

    // ---- a recvonly viewer of the talk camera is answered as before ----
    const plain = await newViewer(browser);
    r = await call({ op: 'viewer', source: 'cam', id: 'vR', rev: 1, sdp: await plain.offerRecvOnly() });
    c.check(r.ok && /a=sendonly/.test(audioSection(r.sdp)) && !/ssrc-audio-level/.test(r.sdp), 'a recvonly viewer gets audio sendonly, no extension');
    r = await call({ op: 'publish', id: 'vR', rev: 2, allowed: true });
    c.check(!r.ok && r.rc === 'ESTALE', `publish names the current mediaRevision (${r.rc})`);
    r = await call({ op: 'publish', id: 'nobody', rev: 1, allowed: true });
    c.check(!r.ok && r.rc === 'ENOENT', `publish on an unknown viewer (${r.rc})`);

    // ---- a source without a speaker: a publishing viewer's sending is refused in the SDP ----
    const fr = await call({ op: 'source_rtp', id: 'feed', port: 0, video_pt: 96, audio_pt: 111 });
    const p2 = await newViewer(browser);
    r = await call({ op: 'viewer', source: 'feed', id: 'vF', rev: 1, sdp: await p2.offerPublish(440) });
    c.check(fr.ok && r.ok && /a=sendonly/.test(audioSection(r.sdp)) && !/ssrc-audio-level/.test(r.sdp),
        `no talkback: a publishing viewer's audio is answered sendonly (${r.error || ''})`);

    await call({ op: 'close', id: 'cam' });
    await browser.close();
    cam.end();
    host.end();
    const ex = await host.waitExit(10000).catch(() => ({ code: 'hung' }));
    c.check(ex.code === 0, `host exits cleanly under sanitizers (${ex.code})`);
    const ce = await cam.waitExit(5000).catch(() => ({ code: 'hung' }));
    c.check(ce.code === 0, `the camera exits cleanly (${ce.code})`);
}

main()
    .catch((e) => c.check(false, `unexpected: ${e.stack || e}`))
    .finally(() => c.done('talk_test'));
