// talk_mute.mjs - run by talk_mute.sh: a talk member publishing a tone,
// muted and unmuted CYCLES times by the call's initiator through
// /talk/audio-access; for each mute, the time from just before the set was
// sent to the member's last packet forwarded to the camera (igwd's log line
// "publish muted (...; its last packet forwarded at T)", the media core's
// clock). Prints the MUTE line.
import { launch, newViewer, sleep, AUTOPLAY_ARGS } from '../media/lib.mjs';
import { DEMO, target, camera, app, startCamera, call } from '../igwd/live_lib.mjs';
import { muteToSilence } from './mute.mjs';

const CYCLES = Number(process.env.CYCLES || 20);
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const die = (m) => { console.error(`talk_mute: ${m}`); process.exit(1); };

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const owner = await app(DEMO.user);
    const browser = await launch({ args: AUTOPLAY_ARGS });
    let r = await call(DEMO.user, '/api/v1/im-standin/calls/start', { groupId: DEMO.group.groupId });
    if (r.status !== 200) die(`calls/start: ${JSON.stringify(r.body)}`);
    const callId = r.body.data.callId;
    const beat = setInterval(() => call(DEMO.user, '/api/v1/im-standin/calls/heartbeat', { callId }).catch(() => {}), 5000);
    const t = token('open');
    for (let i = 0; i < 150; i++) {
        r = await owner.command({ msgToken: t, method: 'interaction.open', target, params: { purpose: 'ipcTalk', cameraId: camera, callId } });
        if (!(r.status === 503 && r.body.data.reason === 'the camera is offline')) break;
        await sleep(100);
    }
    if (r.status !== 200) die(`open: ${JSON.stringify(r.body)}`);
    const sid = (await owner.result(t)).data.sessionId;
    const v = await newViewer(browser);
    const to = token('offer');
    await owner.command({ msgToken: to, method: 'interaction.mediaOffer', sessionId: sid,
        params: { mediaRevision: 1, webrtc: { iceMode: 'full', sdp: await v.offerPublish(440) } } });
    const ans = await owner.result(to, 15000);
    if (!ans || ans.code !== 200) die(`mediaOffer: ${JSON.stringify(ans)}`);
    await v.setAnswer(ans.data.webrtc.sdp);
    await v.waitFor((x) => x.audioSent > 50, 15000).catch((e) => die(`no audio sent: ${JSON.stringify(e.stats)}`));
    const access = (body) => call(DEMO.user, '/api/v1/im/interaction/talk/audio-access', { callId, targetUserID: '1001', ...body });
    r = await access({ operation: 'read' });
    let rev = r.body.data.audioRevision;
    const set = async (allowed) => {
        const sent = Date.now();
        r = await access({ operation: 'set', allowed, expectedRevision: rev });
        if (r.status !== 200) die(`${allowed ? 'unmute' : 'mute'}: ${JSON.stringify(r.body)}`);
        rev = r.body.data.audioRevision;
        return sent;
    };
    if (!r.body.data.publishAllowed)
        await set(true);
    const out = await muteToSilence({ cycles: CYCLES, logPath: process.env.IGW_IGWD_LOG,
        marker: `session ${sid}: publish muted`, mute: () => set(false), unmute: () => set(true) }).catch((e) => die(e.message));
    clearInterval(beat);
    out.sort((a, b) => a - b);
    const q = (p) => out[Math.min(out.length - 1, Math.floor(p * out.length))];
    console.log(`talk_mute: per cycle (ms, sorted): ${out.join(' ')}`);
    console.log(`MUTE cycles=${out.length} mute_to_silence_p50_ms=${q(0.5)} mute_to_silence_p99_ms=${q(0.99)} mute_to_silence_max_ms=${out[out.length - 1]}`);
    await browser.close();
    cam.kill('SIGTERM');
    await sleep(300);
    process.exit(0);
}

main().catch((e) => die(e.stack || String(e)));
