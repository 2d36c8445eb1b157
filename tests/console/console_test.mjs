// console_test.mjs BASE TOKEN PRODUCT DEVICE CAMERA - the console page in
// headless Chromium against a running igwd (console_test.sh starts it, the
// services and the device that answers the first device.action):
// prefilled from the URL fragment, log in, register, WebSocket push, a
// device.action whose interaction.result appears and is acknowledged, an
// error envelope shown verbatim, the pull fallback, a bad token's 401, no
// token in any URL, no CSP violation or script error.
// --live: the live view; --talk: talk from a call (talkTest); --recordings:
// the recordings panel and playback (recordingsTest).
import { readFileSync, existsSync } from 'node:fs';
import { launch, sleep, Checker, AUTOPLAY_ARGS } from '../media/lib.mjs';

const live = process.argv[2] === '--live';
const talk = process.argv[2] === '--talk';
const recordings = process.argv[2] === '--recordings';
const [base, token, product, device, camera, otherToken, thirdToken, speakerLog] =
    process.argv.slice(live || talk || recordings ? 3 : 2);
const catT0 = Number(otherToken); // --recordings CAT_T0 [play]
if (!camera || (talk && !speakerLog) || (recordings && !Number.isSafeInteger(catT0))) {
    console.error('usage: console_test.mjs [--live] BASE TOKEN PRODUCT DEVICE CAMERA\n' +
        '       console_test.mjs --talk BASE TOKEN PRODUCT DEVICE CAMERA TOKEN_1002 TOKEN_1003 SPEAKER_LOG\n' +
        '       console_test.mjs --recordings BASE TOKEN PRODUCT DEVICE CAMERA CAT_T0 [play]');
    process.exit(2);
}
const chk = new Checker();
const WAIT = { timeout: 20000 };

// A page with its problems (script errors, CSP violations) and every URL it
// requested (HTTP and WebSocket) recorded.
async function openPage(browser, fragment) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = [];
    const urls = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e}`));
    page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) problems.push(m.text());
    });
    page.on('request', (r) => urls.push(r.url()));
    page.on('websocket', (ws) => urls.push(ws.url()));
    await page.goto(`${base}/console/#${fragment}`);
    return { page, problems, urls, close: () => context.close() };
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
const results = (page) =>
    page.$$eval('#events li[data-method="interaction.result"] pre', (ps) => ps.map((p) => JSON.parse(p.textContent)));

// Deliveries still pending for the page's endpoint, read through the API
// the way the page reads it (the page's token and endpoint).
const pending = (page) =>
    page.evaluate(async () => {
        const res = await fetch('/api/v1/im/interaction/events', {
            method: 'POST',
            headers: {
                authorization: 'Bearer ' + document.getElementById('token').value.trim(),
                'content-type': 'application/json',
            },
            body: JSON.stringify({ endpointId: document.getElementById('endpoint').textContent, limit: 32 }),
        });
        return (await res.json()).data.list.length;
    });

async function eventually(what, fn, ms = 10000) {
    const end = Date.now() + ms;
    for (;;) {
        if (await fn()) return true;
        if (Date.now() > end) return chk.check(false, `${what} within ${ms} ms`);
        await sleep(200);
    }
}

// The live view (--live; console_test.sh runs igw-vcam as CAMERA's device):
// the page reaches established and plays video, pauses and resumes it, and
// ends with state ended.
async function liveViewTest(page) {
    await page.click('#live-open');
    await page.waitForFunction(() => document.getElementById('session-id').textContent !== 'none', null, WAIT);
    chk.check(/^[A-Za-z0-9_-]+$/.test(await text(page, '#session-id')), 'live view: a sessionId from the open result');
    await page.waitForFunction(() => document.getElementById('peer-state').textContent === 'connected', null, WAIT);
    await page.waitForFunction(() => /^established/.test(document.getElementById('session-state').textContent), null, WAIT);
    chk.check(/eventSeq \d+/.test(await text(page, '#session-state')), 'live view: established with its eventSeq');
    await page.waitForFunction(() => {
        const v = document.getElementById('video');
        return v.videoWidth > 0 && v.currentTime > 0.5 && !v.paused;
    }, null, WAIT);
    chk.check(true, 'live view: the video plays');
    const mediaStates = async () =>
        (await results(page)).filter((r) => r.event.data && r.event.data.operation === 'interaction.mediaState').length;
    chk.check((await mediaStates()) >= 1, 'live view: mediaState reported (connecting, connected)');
    // The reports go one at a time, so the last one applied is the page's
    // latest state (the list shows the newest first).
    const lastState = (await results(page)).find((r) => r.event.data && r.event.data.operation === 'interaction.mediaState');
    chk.check(lastState && lastState.event.data.state === 'connected',
        `live view: the last mediaState applied is connected (${JSON.stringify(lastState && lastState.event.data)})`);
    for (const op of ['pause', 'resume']) {
        await page.click(`#live-${op}`);
        await eventually(`trackControl ${op} result`, async () =>
            (await results(page)).some((r) => r.event.data && r.event.data.operation === 'interaction.trackControl' &&
                r.event.code === 200 && r.event.data.state === (op === 'pause' ? 'paused' : 'active')));
    }
    // Restart ICE: a new media generation, the video goes on.
    await page.click('#live-restart');
    await page.waitForFunction(() => document.getElementById('media-revision').textContent === '2', null, WAIT);
    const t0 = await page.$eval('#video', (v) => v.currentTime);
    await eventually('live view: the video plays on after Restart ICE', async () =>
        (await page.$eval('#video', (v) => v.currentTime)) > t0 + 0.5);
    // Connect again: a new endpoint, the live view moved to it, noted.
    const before = await text(page, '#endpoint');
    await page.click('#connect');
    await page.waitForFunction(() => /moved from endpoint/.test(document.getElementById('transfer-note').textContent),
        null, WAIT);
    const after = await text(page, '#endpoint');
    chk.check(after !== before && (await text(page, '#transfer-note')).includes(`to ${after}`),
        `live view: moved to the new endpoint (${await text(page, '#transfer-note')})`);
    const t1 = await page.$eval('#video', (v) => v.currentTime);
    await eventually('live view: the video plays on after the move', async () =>
        (await page.$eval('#video', (v) => v.currentTime)) > t1 + 0.5);
    await page.click('#live-end');
    await page.waitForFunction(() => /^ended \(userHangup\)/.test(document.getElementById('session-state').textContent),
        null, WAIT);
    chk.check((await text(page, '#peer-state')) === 'closed', 'live view: the peer closed at the end');
}

// A voice message (--live; igw-vcam plays it): a file that is no audio is
// refused with the upload's 415 shown; then the page records Chromium's
// fake microphone as WAV, uploads it and sends it; the camera plays it and
// the outcome shows played.
async function messageTest(page) {
    await page.setInputFiles('#msg-file', { name: 'notes.ogg', mimeType: 'audio/ogg', buffer: Buffer.from('not audio at all') });
    await page.click('#msg-send');
    await page.waitForFunction(() => document.getElementById('msg-outcome').textContent === 'refused', null, WAIT);
    chk.check(/HTTP 415[\s\S]*data\.path file/.test(await text(page, '#error')), `message: a file that is no audio: 415 shown (${await text(page, '#error')})`);
    await page.click('#msg-record');
    await page.waitForFunction(() => !document.getElementById('msg-record-stop').disabled, null, WAIT);
    await new Promise((r) => setTimeout(r, 1500));
    await page.click('#msg-record-stop');
    const rec = /^recorded (\d+\.\d) s, WAV \((\d+) bytes\)/.exec(await text(page, '#msg-audio'));
    chk.check(rec && Number(rec[1]) >= 1.0 && Number(rec[2]) > 44, `message: recorded a second or more (${await text(page, '#msg-audio')})`);
    await page.click('#msg-send');
    await page.waitForFunction(() => /^(played|expired|failed|refused)/.test(document.getElementById('msg-outcome').textContent), null, WAIT);
    chk.check((await text(page, '#msg-outcome')) === 'played' && /\(audio\/wav\)$/.test(await text(page, '#msg-content-ref')),
        `message: the camera played the recording (${await text(page, '#msg-outcome')}, ${await text(page, '#msg-content-ref')}, ${await text(page, '#error')})`);
}

// The AI assistant panel (--live): the AI session with Chromium's fake
// microphone, its camera track paused until the consent signed on the page,
// the picture playing under it, paused again after the revoke; the end.
async function aiTest(page) {
    await page.click('#ai-open');
    await page.waitForFunction(() => /^established/.test(document.getElementById('ai-state').textContent), null, WAIT);
    chk.check((await text(page, '#ai-peer')) === 'connected', 'AI: the session established, its peer connected');
    await new Promise((r) => setTimeout(r, 1500));
    chk.check(await page.$eval('#ai-video', (v) => v.videoWidth === 0 || v.currentTime === 0),
        'AI: no consent, no picture (the vision track is paused)');
    await page.fill('#ai-ttl', '120');
    await page.click('#ai-consent');
    await page.waitForFunction(() => /revision 1, until/.test(document.getElementById('ai-consent-id').textContent), null, WAIT);
    await page.waitForFunction(() => {
        const v = document.getElementById('ai-video');
        return v.videoWidth > 0 && v.currentTime > 0.5;
    }, null, WAIT);
    chk.check(true, `AI: the consent signed (${await text(page, '#ai-consent-id')}), the camera's picture plays`);
    await page.click('#ai-revoke');
    await page.waitForFunction(() => /revision 2, revoked/.test(document.getElementById('ai-consent-id').textContent), null, WAIT);
    await new Promise((r) => setTimeout(r, 800));
    const t0 = await page.$eval('#ai-video', (v) => v.currentTime);
    await new Promise((r) => setTimeout(r, 1500));
    const t1 = await page.$eval('#ai-video', (v) => v.currentTime);
    const frames = await page.$eval('#ai-video', (v) => v.getVideoPlaybackQuality().totalVideoFrames);
    await new Promise((r) => setTimeout(r, 1000));
    const frames2 = await page.$eval('#ai-video', (v) => v.getVideoPlaybackQuality().totalVideoFrames);
    chk.check(frames2 === frames, `AI: revoked, the picture stops (${frames} then ${frames2} frames; time ${t0} ${t1})`);
    await page.click('#ai-end');
    await page.waitForFunction(() => /^ended \(userHangup\)/.test(document.getElementById('ai-state').textContent), null, WAIT);
    chk.check((await text(page, '#ai-peer')) === 'closed', 'AI: ended, the peer closed');
}

// The door-bell (--live, IGW_VCAM_PID the camera): the camera rings
// (SIGUSR1), the page shows who rang with Accept and Decline, accepts (its
// microphone: Chromium's fake one), plays the camera's video, reaches
// established, hangs up: ended (userHangup).
async function doorbellTest(page) {
    process.kill(Number(process.env.IGW_VCAM_PID), 'SIGUSR1');
    await page.waitForFunction(() => !document.getElementById('bell-accept').disabled, null, WAIT);
    chk.check(new RegExp(`^${product}/${device} camera ${camera}$`).test(await text(page, '#bell-who')) &&
        /^ringing eventSeq 1$/.test(await text(page, '#bell-state')), 'door-bell: the page shows who rang, ringing');
    await page.click('#bell-accept');
    await page.waitForFunction(() => /^established/.test(document.getElementById('bell-state').textContent), null, WAIT);
    await page.waitForFunction(() => {
        const v = document.getElementById('bell-video');
        return v.videoWidth > 0 && v.currentTime > 0.5 && !v.paused;
    }, null, WAIT);
    chk.check((await text(page, '#bell-peer-state')) === 'connected', 'door-bell: answered, the camera\'s video plays');
    chk.check(!(await page.$eval('#bell-handover', (e) => e.disabled)), 'door-bell: handover offered during the call');
    await page.click('#bell-hangup');
    await page.waitForFunction(() => /^ended \(userHangup\)/.test(document.getElementById('bell-state').textContent), null, WAIT);
    chk.check((await text(page, '#bell-peer-state')) === 'closed', 'door-bell: the peer closed at the end');
}

// Talk (--talk; igw-vcam as CAMERA's device with --speaker-log, igwd with
// Redis and talk_enabled): as user 1001 the page starts a call of
// demo-group, shows the roster, talks: Chromium's fake microphone (its
// periodic beep) reaches the camera's speaker. A second page as user 1002
// (console_test.sh granted it the camera) joins the call by id and talks
// too (1003 joins from here, so that the call outlives 1002's exit: fewer
// than 2 members end it); the initiator's mute meets a stale revision
// (another set slipped in between its read and its set: refused, read
// again, not retried), then unmutes; 1002 leaves, joins again (memberEpoch
// 2) and the initiator removes that instance; the initiator hangs up: its
// talk session ends.
async function talkTest(browser) {
    const cell = (page, user, i) => page.$eval(`#roster-body tr[data-user-id="${user}"] td:nth-child(${i})`, (e) => e.textContent)
        .catch(() => null);
    const hasRow = (page, user) => page.$(`#roster-body tr[data-user-id="${user}"]`).then((e) => e !== null);
    const frag = (t) => new URLSearchParams({ token: t, product, device, camera }).toString();
    const a = await openPage(browser, frag(token));
    const pa = a.page;
    await pa.click('#connect');
    await pa.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
    chk.check((await text(pa, '#talk-me')) === '1001', 'talk: the page names its user from the token');
    chk.check((await pa.inputValue('#talk-group')) === 'demo-group', 'talk: the group defaults to demo-group');

    // The call, its roster.
    await pa.click('#talk-start');
    await pa.waitForFunction(() => document.getElementById('talk-call').textContent !== 'none', null, WAIT);
    const callId = await text(pa, '#talk-call');
    chk.check(/^[A-Za-z0-9_.:-]+$/.test(callId) && (await pa.inputValue('#talk-call-input')) === callId &&
        (await text(pa, '#talk-epoch')) === '1', `talk: a call started, memberEpoch 1 (${callId})`);
    await eventually('talk: the roster shows the initiator', async () => (await cell(pa, '1001', 3)) === 'true', 6000);
    chk.check((await pa.$eval('#roster-body tr[data-user-id="1001"]', (e) => e.className)) === 'me' &&
        (await cell(pa, '1001', 2)) === '1' &&
        /^\d+$/.test(await cell(pa, '1001', 4)) && (await text(pa, '#talk-initiator')) === '1001',
    'talk: roster row of 1001: memberEpoch 1, publishAllowed true, an audioRevision');

    // Talk: the fake microphone's beep at the camera's speaker.
    const since = Date.now();
    await pa.click('#talk-open');
    await pa.waitForFunction(() => document.getElementById('talk-session-id').textContent !== 'none', null, WAIT);
    const sid = await text(pa, '#talk-session-id');
    chk.check(/^[A-Za-z0-9_-]+$/.test(sid), `talk: a sessionId from the open result (${sid})`);
    await pa.waitForFunction(() => document.getElementById('talk-peer-state').textContent === 'connected', null, WAIT);
    await pa.waitForFunction(() => /^established/.test(document.getElementById('talk-session-state').textContent), null, WAIT);
    chk.check(/eventSeq \d+/.test(await text(pa, '#talk-session-state')), 'talk: established with its eventSeq');
    chk.check((await text(pa, '#talk-mic')) !== 'off', 'talk: the microphone is on');
    let loudest = -200;
    await eventually('talk: the microphone reaches the camera\'s speaker (a level above -40 dB)', async () => {
        if (!existsSync(speakerLog)) return false;
        for (const l of readFileSync(speakerLog, 'utf8').split('\n').filter(Boolean)) {
            const x = JSON.parse(l);
            if (x.at_ms >= since && x.rms_db > loudest) loudest = x.rms_db;
        }
        return loudest > -40;
    }, 10000);
    chk.check(loudest > -40, `talk: the camera heard the page (loudest ${loudest} dB)`);
    await pa.waitForFunction(() => {
        const v = document.getElementById('talk-video');
        const s = document.getElementById('talk-audio').srcObject;
        return v.videoWidth > 0 && v.currentTime > 0.5 && s && s.getAudioTracks().some((t) => t.readyState === 'live');
    }, null, WAIT);
    chk.check(true, 'talk: the camera\'s picture plays and its microphone is received');
    // Mute my own microphone, then unmute: the session stays.
    await pa.click('#talk-mute');
    await pa.waitForFunction(() => /^muted/.test(document.getElementById('talk-mic').textContent), null, WAIT);
    chk.check(/^established/.test(await text(pa, '#talk-session-state')), 'talk: muted without hanging up');
    await pa.click('#talk-unmute');
    await pa.waitForFunction(() => document.getElementById('talk-mic').textContent === 'on', null, WAIT);
    // Translation asks for the consent of the AI panel first (signed there;
    // the translation itself: test-ai's talk part).
    await pa.click('#talk-translate');
    await pa.waitForFunction(() => /^translation: sign a consent/.test(document.getElementById('error').textContent), null, WAIT);
    chk.check((await text(pa, '#talk-translation')) === 'off', 'talk: no translation without a consent, the page says why');

    // A second window: 1002 joins the call by id; it is no initiator.
    const j3 = await fetch(`${base}/api/v1/im-standin/calls/join`, {
        method: 'POST', headers: { authorization: `Bearer ${thirdToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ callId }),
    }).then((r) => r.json());
    chk.check(j3.code === 200, `talk: 1003 joins the call (${JSON.stringify(j3)})`);
    const b = await openPage(browser, frag(otherToken));
    const pb = b.page;
    await pb.click('#connect');
    await pb.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
    await pb.fill('#talk-call-input', callId);
    await pb.click('#talk-join');
    await pb.waitForFunction((c) => document.getElementById('talk-call').textContent === c, callId, WAIT);
    await eventually('talk: 1002 sees both members', async () => (await hasRow(pb, '1001')) && (await hasRow(pb, '1002')), 6000);
    chk.check((await pb.$$('#roster-body button')).length === 0, 'talk: no mute or remove buttons for a member who is no initiator');
    await pb.click('#talk-leave');
    await pb.waitForFunction(() => document.getElementById('talk-status').className === 'refused', null, WAIT);
    chk.check(/interaction\.leave refused: .*acts on a talk session: press Talk first/.test(await text(pb, '#talk-status')),
        `talk: Leave without a talk session is refused, saying why: ${await text(pb, '#talk-status')}`);
    await pb.click('#talk-open');
    await pb.waitForFunction(() => /^established/.test(document.getElementById('talk-session-state').textContent), null, WAIT);
    chk.check((await text(pb, '#talk-peer-state')) === 'connected', 'talk: 1002 talks too (established, connected)');
    await eventually('talk: the initiator sees 1002', async () => (await cell(pa, '1002', 3)) === 'true', 6000);
    const epoch2 = Number(await cell(pa, '1002', 2));
    const rev = Number(await cell(pa, '1002', 4));
    chk.check((await pa.$('#roster-body tr[data-user-id="1002"] button.mute')) !== null &&
        (await pa.$('#roster-body tr[data-user-id="1002"] button.remove')) !== null &&
        (await pa.$('#roster-body tr[data-user-id="1001"] button.remove')) === null,
    'talk: the initiator has mute for every member and remove for the others');

    // Mute, and another set slips in between the page's read and its set.
    // From here, not from the page: its requests are the ones intercepted.
    const outside = async (body) => {
        const r = await fetch(`${base}/api/v1/im/interaction/talk/audio-access`, {
            method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
        });
        return r.json();
    };
    let slipped = null;
    const sets = [];
    await pa.route('**/api/v1/im/interaction/talk/audio-access', async (route) => {
        const body = route.request().postDataJSON();
        if (body.operation === 'set') {
            sets.push(body);
            if (sets.length === 1)
                slipped = await outside({ operation: 'set', callId, targetUserID: '1002', allowed: false,
                    expectedRevision: body.expectedRevision });
        }
        await route.continue();
    });
    await pa.click('#roster-body tr[data-user-id="1002"] button.mute');
    await pa.waitForFunction(() => document.getElementById('talk-status').className === 'refused', null, WAIT);
    const st = await text(pa, '#talk-status');
    const err = await text(pa, '#error');
    chk.check(/stale revision/.test(st) && /stale expectedRevision/.test(st) && new RegExp(`audioRevision ${rev + 1}\\b`).test(st) &&
        /publishAllowed false/.test(st), `talk: a stale revision shown as refused, with the record read again: ${st}`);
    chk.check(/HTTP 400/.test(err) && /data\.path \/expectedRevision/.test(err), `talk: the refusal's envelope: ${err}`);
    chk.check(slipped && slipped.code === 200 && slipped.data.audioRevision === rev + 1,
        `talk: the other set went through first: ${JSON.stringify(slipped)}`);
    chk.check(sets.length === 1 && sets[0].allowed === false && sets[0].expectedRevision === rev,
        `talk: one set, with the revision read, not retried: ${JSON.stringify(sets)}`);
    await pa.unroute('**/api/v1/im/interaction/talk/audio-access');
    await eventually('talk: the roster shows 1002 muted', async () => (await cell(pa, '1002', 3)) === 'false' &&
        (await cell(pa, '1002', 4)) === String(rev + 1), 6000);
    await pa.click('#roster-body tr[data-user-id="1002"] button.mute'); // now "Unmute"
    await eventually('talk: the initiator unmutes 1002', async () => (await cell(pa, '1002', 3)) === 'true' &&
        (await cell(pa, '1002', 4)) === String(rev + 2), 6000);
    chk.check((await pa.$eval('#talk-status', (e) => e.className)) === '' &&
        (await text(pa, '#talk-status')).includes(`user 1002: publishAllowed true, audioRevision ${rev + 2}`),
    `talk: the set shown: ${await text(pa, '#talk-status')}`);

    // 1002 leaves (its talk session ends), joins again; the initiator
    // removes that instance (its memberEpoch as shown); then hangs up.
    await pb.click('#talk-leave');
    await pb.waitForFunction(() => /^ended/.test(document.getElementById('talk-session-state').textContent), null, WAIT);
    chk.check(/^ended \(memberLeft\)/.test(await text(pb, '#talk-session-state')) &&
        (await text(pb, '#talk-status')).includes(`left: 1002 (memberEpoch ${epoch2}), call ended false`) &&
        (await text(pb, '#talk-call')) === 'none (you left)' && (await text(pb, '#talk-peer-state')) === 'closed',
    `talk: 1002 left, its talk session ended: ${await text(pb, '#talk-session-state')} / ${await text(pb, '#talk-status')}`);
    await eventually('talk: 1002 gone from the initiator\'s roster', async () => !(await hasRow(pa, '1002')), 6000);
    await pb.click('#talk-join');
    await pb.waitForFunction((c) => document.getElementById('talk-call').textContent === c, callId, WAIT);
    chk.check((await text(pb, '#talk-epoch')) === String(epoch2 + 1), 'talk: 1002 joined again, a new memberEpoch');
    await eventually('talk: the initiator sees 1002\'s new instance', async () => (await cell(pa, '1002', 2)) === String(epoch2 + 1), 6000);
    await pa.click('#roster-body tr[data-user-id="1002"] button.remove');
    await eventually('talk: 1002 removed from the roster', async () => !(await hasRow(pa, '1002')), 6000);
    chk.check((await text(pa, '#talk-status')).includes(
        `left: 1002 (memberEpoch ${epoch2 + 1}), call ended false, remaining ["1001","1003"]`),
    `talk: the removal's result shown: ${await text(pa, '#talk-status')}`);
    await eventually('talk: the heartbeat sent', async () => /^sent .*, deadline /.test(await text(pa, '#talk-heartbeat')), 12000);
    await pa.click('#talk-hangup');
    await pa.waitForFunction(() => /^ended/.test(document.getElementById('talk-session-state').textContent), null, WAIT);
    chk.check(/^ended \((callEnded|memberLeft)\)/.test(await text(pa, '#talk-session-state')),
        `talk: hanging up ended the talk session: ${await text(pa, '#talk-session-state')}`);
    chk.check((await text(pa, '#talk-peer-state')) === 'closed' && (await text(pa, '#talk-mic')) === 'off' &&
        /^none \(hung up/.test(await text(pa, '#talk-call')) && (await pa.$$('#roster-body tr')).length === 0,
    'talk: the peer closed, the microphone off, no call, no roster');
    chk.check(a.problems.length === 0 && b.problems.length === 0,
        `talk: no script error or CSP violation: ${[...a.problems, ...b.problems].join(' | ')}`);
    await b.close();
    await a.close();
}

// The recordings panel (--recordings; console_test.sh wrote 40 one-minute
// rows cat-000.. from catT0, every other one with audio, every tenth
// unavailable): a window's page in start order with hasMore, Next, the
// 24 h bound kept by the page, the API's refusal shown. With `play` (igw-vcam
// records): the default window lists the camera's own recordings; Play on
// one opens a playback: loaded, Play refused before ready (the platform's
// answer shown), ready, Play (frames decoded), Pause (frames stop), seek,
// Play, Stop (ended userStopped); a second playback runs to its end
// (ended recordingEnded).
async function recordingsTest(page, catT0, play) {
    const queries = [];
    page.on('request', (r) => r.url().endsWith('/recordings/query') && queries.push(r.postDataJSON()));
    const rows = () => page.$$eval('#rec-body tr', (trs) => trs.map((tr) => ({
        id: tr.dataset.recordingId, start: Number(tr.dataset.startTimeMs), duration: Number(tr.dataset.durationMs),
        cells: Array.from(tr.cells, (c) => c.textContent), play: !tr.querySelector('button.play').disabled,
    })));
    const picker = (ms) => page.evaluate((t) => pickerValue(t), ms);
    const local = (ms) => page.evaluate((t) => new Date(t).toLocaleString(), ms);
    const statusIs = (re) => page.waitForFunction((src) => new RegExp(src).test(document.getElementById('rec-status').textContent),
        re.source, WAIT);
    const cat = (i) => `cat-${String(i).padStart(3, '0')}`;

    // The default window: the last hour, ending about now.
    const w0 = await page.evaluate(() => [new Date(document.getElementById('rec-start').value).getTime(),
        new Date(document.getElementById('rec-end').value).getTime()]);
    chk.check(w0[1] - w0[0] === 3600000 && Math.abs(Date.now() - w0[1]) < 120000, `recordings: the default window is the last hour (${w0})`);

    // A window over the 40 rows: the first 32 in start order, hasMore.
    await page.fill('#rec-start', await picker(catT0 - 1000));
    await page.fill('#rec-end', await picker(catT0 + 3600000));
    await page.click('#rec-query');
    await statusIs(/^32 recordings starting in the window; hasMore: narrow the window/);
    let r = await rows();
    chk.check(r.length === 32 && r.every((x, i) => x.id === cat(i) && x.start === catT0 + i * 60000),
        `recordings: the first page, 32 rows in start order (${r.map((x) => x.id).join(' ')})`);
    chk.check(r[0].cells[0] === await local(catT0) && r[0].cells[1] === '59.0 s' && r[0].cells[2] === 'H264 + opus' &&
        r[0].cells[3] === '1' && r[0].cells[4] === 'yes' && r[0].play &&
        r[1].cells[2] === 'H264' && r[1].cells[3] === '2' && r[1].cells[1] === '58.9 s',
    `recordings: start (local time), duration, codecs, version, available (${JSON.stringify(r.slice(0, 2))})`);
    chk.check(r[9].cells[4] === 'no' && !r[9].play && r[19].cells[4] === 'no' && !r[19].play && r[8].play,
        'recordings: an unavailable recording has no Play');
    const q0 = queries[queries.length - 1];
    chk.check(q0 && q0.limit === 32 && q0.startTimeMs === catT0 - 1000 && q0.endTimeMs === catT0 + 3600000 &&
        q0.cameraId === camera && q0.target.productID === product && q0.target.deviceName === device,
    `recordings: the query as sent (${JSON.stringify(q0)})`);
    chk.check(!(await page.$eval('#rec-next', (b) => b.disabled)), 'recordings: Next offered when truncated');

    // Next: the window's start just past the last row's start.
    await page.click('#rec-next');
    await statusIs(/^8 recordings starting in the window$/);
    r = await rows();
    chk.check(r.length === 8 && r.every((x, i) => x.id === cat(32 + i)), `recordings: Next shows the rest (${r.map((x) => x.id).join(' ')})`);
    const q1 = queries[queries.length - 1];
    chk.check(q1.startTimeMs === catT0 + 31 * 60000 + 1 && q1.endTimeMs === catT0 + 3600000 &&
        (await page.inputValue('#rec-start')) === await picker(catT0 + 31 * 60000 + 1),
    `recordings: Next moved the start past the last row's (${JSON.stringify(q1)})`);
    chk.check(await page.$eval('#rec-next', (b) => b.disabled), 'recordings: no Next when the page is complete');

    // Never more than 24 h: the page says so and asks nothing.
    const before = queries.length;
    await page.fill('#rec-end', await picker(catT0 + 31 * 60000 + 1 + 86400001));
    await page.click('#rec-query');
    await statusIs(/refused: the window is at most 24 h/);
    chk.check(queries.length === before && (await page.$$('#rec-body tr')).length === 0,
        'recordings: a window over 24 h is not sent, the list cleared');

    // The API's refusal, with its reason: a camera the device does not have.
    await page.fill('#camera', 'no-such-cam');
    await page.click('#rec-24h');
    await statusIs(/^recordings\/query refused: .+ \(\/cameraId\)$/);
    const err = await text(page, '#error');
    chk.check(/HTTP 404/.test(err) && /data\.path \/cameraId/.test(err) && queries.length === before + 1,
        `recordings: the 404 shown with its reason: ${await text(page, '#rec-status')} / ${err}`);
    await page.fill('#camera', camera);

    // last 24 h: the window ends now and holds the 40 rows (and the camera's own): truncated.
    await page.click('#rec-24h');
    await statusIs(/^32 recordings .*hasMore/);
    const q2 = queries[queries.length - 1];
    r = await rows();
    chk.check(q2.endTimeMs - q2.startTimeMs === 86400000 && Math.abs(Date.now() - q2.endTimeMs) < 60000 && r[0].id === cat(0),
        `recordings: last 24 h (${JSON.stringify(q2)}, first ${r[0].id})`);
    if (!play) return;

    // ---- playback of what the camera recorded ------------------------------------------------------
    let own = [];
    await eventually('playback: the camera\'s recordings in the last hour', async () => {
        await page.click('#rec-1h');
        await statusIs(/starting in the window|refused/);
        own = (await rows()).filter((x) => x.play && !x.id.startsWith('cat-'));
        return own.length >= 1;
    }, 30000);
    if (own.length < 1) return;
    const rec = own[0];
    chk.check(rec.duration > 2000 && /^H264 \+ OPUS$/i.test(rec.cells[2]), `playback: a recording of the camera (${JSON.stringify(rec)})`);
    const phase = () => text(page, '#pb-phase');
    const phaseIs = (re, ms = 20000) => page.waitForFunction((src) => new RegExp(src).test(document.getElementById('pb-phase').textContent),
        re.source, { timeout: ms });
    const frames = async () => Number(await text(page, '#pb-frames'));
    const disabled = (id) => page.$eval(id, (b) => b.disabled);

    // Hold the page's mediaState connected until Play has been tried before ready.
    let release, sent;
    const held = new Promise((res) => (release = res));
    const passed = new Promise((res) => (sent = res)); // the held request went on (or could not)
    const releaseLater = setTimeout(release, 15000);
    await page.route('**/api/v1/im/interaction/commands', async (route) => {
        const c = route.request().postDataJSON().command;
        const hold = c.method === 'interaction.mediaState' && c.params.state === 'connected';
        if (hold) await held;
        await route.continue().catch((e) => chk.check(false, `playback: the page's ${c.method} went on: ${e}`));
        if (hold) sent();
    });
    await page.click(`#rec-body tr[data-recording-id="${rec.id}"] button.play`);
    await phaseIs(/^loaded/);
    chk.check(/^[A-Za-z0-9_-]+$/.test(await text(page, '#pb-session-id')) &&
        (await text(page, '#pb-recording')).startsWith(rec.id), `playback: opened, loaded (${await phase()})`);
    chk.check((await disabled('#pb-play')) && (await disabled('#pb-pause')) && !(await disabled('#pb-stop')),
        'playback: loaded: Play and Pause disabled, Stop offered');
    await page.$eval('#pb-play', (b) => (b.disabled = false)); // as if the page let it through
    await page.click('#pb-play');
    await page.waitForFunction(() => document.getElementById('pb-status').className === 'refused', null, WAIT);
    const refused = await text(page, '#pb-status');
    chk.check(/play refused: .+ \(\/command\/params\/operation\)$/.test(refused) && /HTTP 409/.test(await text(page, '#error')) &&
        (await disabled('#pb-play')), `playback: Play before ready refused by the platform, shown: ${refused}`);
    clearTimeout(releaseLater);
    release();
    await passed;
    await page.unroute('**/api/v1/im/interaction/commands');
    await phaseIs(/^ready/);
    chk.check(!(await disabled('#pb-play')) && (await disabled('#pb-pause')) && (await text(page, '#pb-peer-state')) === 'connected',
        'playback: ready: Play offered, the peer connected');
    await sleep(1500);
    chk.check((await frames()) === 0, 'playback: ready, and no frame before Play');

    // Play: frames decode.
    await page.click('#pb-play');
    await phaseIs(/^playing/);
    await eventually('playback: frames decoded after Play', async () => (await frames()) > 0, 5000);
    let el = {};
    await eventually('playback: the video element shows the picture', async () => {
        el = await page.evaluate(() => {
            const v = document.getElementById('pb-video');
            return { w: v.videoWidth, t: v.currentTime, paused: v.paused, rs: v.readyState,
                shown: v.getVideoPlaybackQuality().totalVideoFrames };
        });
        return el.w > 0 && !el.paused && el.t > 0.2 && el.shown > 0;
    }, 5000);
    chk.check(el.w > 0 && !el.paused && el.t > 0.2 && el.shown > 0, `playback: playing, the video plays (${JSON.stringify(el)})`);
    // The result comes over the events, the picture over the media: either may be first.
    await eventually('playback: the position from the play result',
        async () => /^\d+ ms \(play result: playing\)$/.test(await text(page, '#pb-position')), 5000);

    // Pause: frames stop (once the last ones in flight are decoded).
    await sleep(800);
    await page.click('#pb-pause');
    await phaseIs(/^paused/);
    await page.waitForFunction(() => /pause: paused at/.test(document.getElementById('pb-status').textContent), null, WAIT);
    const pos = await text(page, '#pb-position');
    const at = Number(pos.split(' ')[0]);
    chk.check(/ \(pause result: paused\)$/.test(pos) && at > 0 && at < rec.duration, `playback: paused inside the recording (${pos})`);
    chk.check(new RegExp(`^paused at ${at} ms, eventSeq \\d+$`).test(await phase()), `playback: the paused event's position (${await phase()})`);
    let f1 = await frames();
    for (let i = 0; i < 6; i++) {
        await sleep(600);
        const f = await frames();
        if (f === f1) break;
        f1 = f;
    }
    await sleep(1500);
    const f2 = await frames();
    chk.check(f1 > 0 && f2 === f1, `playback: no frames while paused (${f1} -> ${f2})`);

    // Seek, on release of the slider: still paused, at or before the position.
    await page.fill('#pb-seek', '1000');
    await page.waitForFunction(() => /seek: paused at/.test(document.getElementById('pb-status').textContent), null, WAIT);
    const sp = await text(page, '#pb-position');
    chk.check(/^\d+ ms \(seek result: paused\)$/.test(sp) && Number(sp.split(' ')[0]) <= 1000 && /^paused/.test(await phase()),
        `playback: seek to 1000 ms, still paused (${sp})`);
    await page.click('#pb-play');
    await phaseIs(/^playing/);
    await eventually('playback: frames again after Play', async () => (await frames()) > f2, 5000);
    chk.check((await frames()) > f2, 'playback: frames again after Play');

    // Stop.
    await page.click('#pb-stop');
    await phaseIs(/^ended/);
    chk.check(/^ended \(userStopped\)/.test(await phase()) && (await text(page, '#pb-peer-state')) === 'closed' &&
        (await disabled('#pb-stop')) && (await disabled('#pb-play')), `playback: Stop ended it (${await phase()})`);
    chk.check((await text(page, '#pb-phases')) === 'invited → loaded → ready → playing → paused → playing → ended (userStopped)',
        `playback: the phases as the events said them: ${await text(page, '#pb-phases')}`);

    // Another playback runs to the recording's end.
    await page.click(`#rec-body tr[data-recording-id="${rec.id}"] button.play`);
    await phaseIs(/^ready/);
    await page.click('#pb-play');
    await phaseIs(/^ended/, rec.duration + 15000);
    chk.check((await text(page, '#pb-phases')) === 'invited → loaded → ready → playing → ended (recordingEnded)',
        `playback: played to its end: ${await text(page, '#pb-phases')}`);
}

const browser = await launch(talk ? { args: AUTOPLAY_ARGS } : {});
if (talk) {
    try {
        await talkTest(browser);
    } catch (e) {
        chk.check(false, `talk: unexpected: ${e.stack || e}`);
    } finally {
        await browser.close();
    }
    chk.done('console test (talk)');
}
if (recordings) {
    let shown = null; // on a failure, what the page showed
    try {
        const frag = new URLSearchParams({ token, product, device, camera }).toString();
        const { page, problems, close } = await openPage(browser, frag);
        shown = () => page.evaluate(() => ['rec-status', 'pb-phases', 'pb-status', 'pb-peer-state', 'pb-frames', 'error']
            .map((id) => `${id}: ${document.getElementById(id).textContent}`).join('\n'));
        await page.click('#connect');
        await page.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
        await recordingsTest(page, catT0, thirdToken === 'play');
        chk.check(problems.length === 0, `recordings: no script error or CSP violation: ${problems.join(' | ')}`);
        await close();
    } catch (e) {
        chk.check(false, `recordings: unexpected: ${e.stack || e}\n${shown ? await shown().catch(() => '') : ''}`);
    } finally {
        await browser.close();
    }
    chk.done('console test (recordings)');
}
if (live) {
    try {
        const frag = new URLSearchParams({ token, product, device, camera }).toString();
        const { page, problems, close } = await openPage(browser, frag);
        await page.click('#connect');
        await page.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
        await liveViewTest(page);
        await messageTest(page);
        await doorbellTest(page).catch(async (e) => {
            const show = async (sel) => `${sel}=${await text(page, sel).catch(() => '?')}`;
            const ev = await page.$$eval('#events li .head', (l) => l.slice(0, 6).map((x) => x.textContent)).catch(() => []);
            throw new Error(`${e.message}; ${(await Promise.all(['#bell-who', '#bell-state', '#bell-status', '#bell-peer-state',
                '#error', '#ws-status'].map(show))).join(' ')}; problems: ${problems.join(' | ')}; events: ${ev.join(' / ')}`);
        });
        await aiTest(page).catch(async (e) => {
            const show = async (sel) => `${sel}=${await text(page, sel).catch(() => '?')}`;
            throw new Error(`${e.message}; ${(await Promise.all(['#ai-session', '#ai-state', '#ai-peer', '#ai-consent-id',
                '#error'].map(show))).join(' ')}; problems: ${problems.join(' | ')}`);
        });
        chk.check(problems.length === 0, `live view: no script error or CSP violation: ${problems.join(' | ')}`);
        await close();
    } catch (e) {
        chk.check(false, `live view: unexpected: ${e.stack || e}`);
    } finally {
        await browser.close();
    }
    chk.done('console test (live view)');
}
try {
    const frag = new URLSearchParams({ token, product, device, camera }).toString();
    const { page, problems, urls, close } = await openPage(browser, frag);
    chk.check((await page.inputValue('#token')) === token, 'the token from the fragment');
    chk.check((await page.inputValue('#product')) === product && (await page.inputValue('#device-name')) === device &&
        (await page.inputValue('#camera')) === camera, 'the camera form from the fragment');

    // Log in, register, listen.
    await page.click('#connect');
    await page.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
    chk.check(/^[A-Za-z0-9_-]{22,}$/.test(await text(page, '#endpoint')), 'an endpoint registered');
    chk.check((await text(page, '#error')) === '', 'no error after the login');

    // device.action: the device answers; the result is pushed, shown, acknowledged.
    await page.click('#action-form button');
    await page.waitForSelector('#events li[data-method="interaction.result"]', WAIT);
    let r = await results(page);
    chk.check(r.length === 1 && r[0].event.code === 200 && r[0].event.data.operation === 'device.action' &&
        r[0].event.data.state === 'succeeded' && r[0].event.data.output.ok === true,
    `the action's result shown: ${JSON.stringify(r)}`);
    await eventually('the pushed result acknowledged', async () => (await pending(page)) === 0);

    // An error envelope, verbatim.
    await page.fill('#action-input', '{"direction":1,"speed":11}');
    await page.click('#action-form button');
    await page.waitForFunction(() => document.getElementById('error').textContent !== '', null, WAIT);
    const err = await text(page, '#error');
    chk.check(/HTTP 400/.test(err) && /code 100400/.test(err) && /data\.path \/command\/params\/input\/speed/.test(err) &&
        /data\.reason \S/.test(err), `the 400 envelope shown: ${err}`);

    // The pull fallback: push closed, a control nobody answers fails by the
    // command timeout; its result is pulled and acknowledged.
    await page.click('#disconnect');
    chk.check((await text(page, '#ws-status')) === 'closed', 'push closed');
    await page.click('#control-form button');
    await eventually('the timeout result pulled', async () => {
        await page.click('#pull');
        return (await results(page)).length === 2;
    }, 15000);
    r = await results(page);
    const ctl = r.find((x) => x.event.data && x.event.data.operation === 'device.propertyControl');
    chk.check(ctl && ctl.event.code !== 200 && typeof ctl.event.data.reason === 'string',
        `the control's failure result shown: ${JSON.stringify(ctl)}`);
    await eventually('the pulled result acknowledged', async () => (await pending(page)) === 0);

    chk.check(urls.length > 0 && urls.every((u) => !u.includes(token) && !u.includes('?')),
        `no token or query string in any URL: ${urls.join(' ')}`);
    chk.check(urls.some((u) => u.startsWith('ws://') && u.includes('/events/ws/')), 'the page opened the push WebSocket');
    chk.check(problems.length === 0, `no script error or CSP violation: ${problems.join(' | ')}`);
    await close();

    // A bad token: the 401 envelope, no endpoint.
    const bad = await openPage(browser, 'token=not-a-token');
    await bad.page.click('#connect');
    await bad.page.waitForFunction(() => document.getElementById('error').textContent !== '', null, WAIT);
    const e401 = await text(bad.page, '#error');
    chk.check(/HTTP 401/.test(e401) && /code 100401/.test(e401) && /data\.reason a valid login token is required/.test(e401),
        `the 401 envelope shown: ${e401}`);
    chk.check((await text(bad.page, '#endpoint')) === 'none', 'no endpoint with a bad token');
    chk.check(bad.problems.length === 0, `no script error or CSP violation: ${bad.problems.join(' | ')}`);
    await bad.close();
} catch (e) {
    chk.check(false, `unexpected: ${e.stack || e}`);
} finally {
    await browser.close();
}
chk.done('console test (browser)');
