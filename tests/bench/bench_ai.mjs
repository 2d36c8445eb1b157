// bench_ai.mjs - AI sessions through igwd's public API (issue 27), with
// igw-vcam as the camera, Chromium as the application and igw-proc (behind
// ai_tap.mjs) as the processors. Prints one AI line:
//   consent_create_p50_ms / _p99_ms: /vision-consents/create's round trip
//       (the owner's authority, the source re-read, the locking transaction);
//   revoke_to_last_frame_p50_ms / _p99_ms: from sending the revoke to the
//       last video packet the application received (its vision track
//       stopped by the owner), REVOKES rounds;
//   frame_take_p99_ms: a processor's take to its grant (the owner's re-read
//       and the lock), TAKES takes, from the tap's log;
//   speech_to_caption_p50_ms: the end of an utterance's speech to its
//       translated caption, CAPTIONS captions, from the tap's log.
// env: IGW_BASE, IGW_VCAM, IGW_DEMO, IGW_SOUNDS, BENCH_TAP_LOG; CREATES (200),
// REVOKES (20), TAKES (30), CAPTIONS (5).
import { readFileSync, existsSync } from 'node:fs';
import { launch, sleep, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, call, app, camera, startCamera, openSession } from '../igwd/live_lib.mjs';

const BASE = process.env.IGW_BASE;
const SOUNDS = process.env.IGW_SOUNDS;
const CREATES = Number(process.env.CREATES || 200);
const REVOKES = Number(process.env.REVOKES || 20);
const TAKES = Number(process.env.TAKES || 30);
const CAPTIONS = Number(process.env.CAPTIONS || 5);
const V = '/api/v1/im/vision-consents';
let seq = 0;
const tok = (p) => `${p}-${process.pid}-${++seq}`;
const pct = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : -1;
};
const must = (cond, what) => {
    if (!cond) throw new Error(what);
};

async function openAi(a, browser) {
    const { sid, v } = await openSession({ check: must }, a, browser, 'aiVision', tok,
        { purpose: 'aiVision', url: `${BASE}/healthz`, offer: (x) => x.offerAssistant(0) });
    await v.waitFor((x) => x.connectionState === 'connected', 10000);
    await a.command({ msgToken: tok('st'), method: 'interaction.mediaState', sessionId: sid,
        params: { mediaRevision: 1, state: 'connected' } });
    must(await a.state(sid, 'established', 20000), 'established');
    return { sid, v };
}

const create = (me, sid) => call(me, `${V}/create`, { msgToken: tok('k'), sourceSessionId: sid, cameraId: camera,
    trackId: 'video-1', expectedMediaRevision: 1, expiresAt: Date.now() + 600000 });

/** The last video packet's arrival (ms since the epoch, Chromium's stats). */
const lastVideo = (v) => v.page.evaluate(async () => {
    let t = 0;
    (await window.__igw.pc.getStats()).forEach((r) => {
        if (r.type === 'inbound-rtp' && r.kind === 'video' && r.lastPacketReceivedTimestamp) t = r.lastPacketReceivedTimestamp;
    });
    return t;
});

async function session(wav, fn) {
    const me = DEMO.user;
    const a = await app(me);
    const browser = await launch({ args: [...AUTOPLAY_ARGS, `--use-file-for-fake-audio-capture=${wav}`] });
    try {
        const { sid, v } = await openAi(a, browser);
        await fn(me, a, sid, v);
        await a.command({ msgToken: tok('end'), method: 'interaction.end', sessionId: sid, params: { reason: 'userHangup' } });
        await a.state(sid, 'ended', 10000);
    } finally {
        await browser.close().catch(() => {});
    }
}

async function processorRun(a, sid, cid, processor, kind, want) {
    const params = { processorId: `${processor}-${seq}`, processor, operation: 'attach', consentIds: [cid],
        sourceTrackIds: processor === 'aiAssist' ? ['video-1', 'mic'] : ['mic'] };
    if (processor === 'translation') params.targetLanguage = 'es-ES';
    const t = tok('attach');
    const r = await a.command({ msgToken: t, method: 'interaction.processorControl', sessionId: sid, params });
    must(r.status === 200 && (await a.result(t, 25000)).code === 200, `attach ${processor}`);
    const from = a.events.length;
    // Each one waits for the looped question or sentence to come round
    // again (a few seconds, more on a busy machine): what came by the
    // deadline counts, none is a failure.
    const deadline = Date.now() + want * 10000 + 30000;
    for (;;) {
        const n = a.events.slice(from).filter((e) => e.method === 'interaction.processor' && e.data.kind === kind).length;
        if (n >= want) return n;
        if (Date.now() >= deadline) {
            must(n > 0, `no ${kind} event`);
            console.error(`bench-ai: ${n} ${kind} events of ${want} by the deadline`);
            return n;
        }
        await a.pull();
        await sleep(200);
    }
}

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[cam] ', []);
    for (let i = 0; i < 100 && !/capability accepted/.test(cam.stderr()); i++) await sleep(100);
    const creates = [], revokes = [];
    try {
        // Revocations first (every consent is revoked again), then creates.
        await session(`${SOUNDS}/count.wav`, async (me, a, sid, v) => {
            for (let i = 0; i < REVOKES; i++) {
                const r = await create(me, sid);
                must(r.status === 200, `create: ${JSON.stringify(r.body)}`);
                const f0 = (await v.stats()).framesDecoded;
                await v.waitFor((x) => x.framesDecoded > f0 + 3, 10000);
                const t0 = Date.now();
                const rv = await call(me, `${V}/revoke`, { consentId: r.body.data.consent.consentId, expectedRevision: 1 });
                must(rv.status === 200, 'revoke');
                await sleep(1000);
                const last = await lastVideo(v);
                revokes.push(Math.max(0, last - t0));
            }
            for (let i = 0; i < CREATES; i++) {
                const t0 = performance.now();
                const r = await create(me, sid);
                creates.push(performance.now() - t0);
                must(r.status === 200, `create: ${JSON.stringify(r.body)}`);
            }
        });
        // Frame takes: the assistant asked over and over.
        await session(`${SOUNDS}/count.wav`, async (me, a, sid) => {
            const r = await create(me, sid);
            await processorRun(a, sid, r.body.data.consent.consentId, 'aiAssist', 'answer', TAKES);
        });
        // Captions.
        await session(`${SOUNDS}/sentence.wav`, async (me, a, sid) => {
            const r = await create(me, sid);
            await processorRun(a, sid, r.body.data.consent.consentId, 'translation', 'caption', CAPTIONS);
        });
    } finally {
        cam.kill('SIGTERM');
        await cam.exited;
    }
    const log = existsSync(process.env.BENCH_TAP_LOG)
        ? readFileSync(process.env.BENCH_TAP_LOG, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    const takes = log.filter((x) => x.take !== undefined && x.op === 'granted').map((x) => x.take);
    const captions = log.filter((x) => x.caption !== undefined).map((x) => x.caption);
    must(takes.length > 0 && captions.length > 0, `the tap saw ${takes.length} takes, ${captions.length} captions`);
    const f = (x) => x.toFixed(1);
    console.log(`AI creates=${creates.length} consent_create_p50_ms=${f(pct(creates, 50))} consent_create_p99_ms=${f(pct(creates, 99))}` +
        ` revokes=${revokes.length} revoke_to_last_frame_p50_ms=${f(pct(revokes, 50))} revoke_to_last_frame_p99_ms=${f(pct(revokes, 99))}` +
        ` takes=${takes.length} frame_take_p50_ms=${f(pct(takes, 50))} frame_take_p99_ms=${f(pct(takes, 99))}` +
        ` captions=${captions.length} speech_to_caption_p50_ms=${f(pct(captions, 50))} speech_to_caption_p99_ms=${f(pct(captions, 99))}`);
}

main().then(() => process.exit(0), (e) => {
    console.error(e);
    process.exit(1);
});
