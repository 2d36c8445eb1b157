// console_test.mjs BASE TOKEN PRODUCT DEVICE CAMERA - the console page in
// headless Chromium against a running igwd (console_test.sh starts it, the
// services and the device that answers the first device.action):
// prefilled from the URL fragment, log in, register, WebSocket push, a
// device.action whose interaction.result appears and is acknowledged, an
// error envelope shown verbatim, the pull fallback, a bad token's 401, no
// token in any URL, no CSP violation or script error.
// --live: the live view; --talk: talk from a call (talkTest).
import { readFileSync, existsSync } from 'node:fs';
import { launch, sleep, Checker, AUTOPLAY_ARGS } from '../media/lib.mjs';

const live = process.argv[2] === '--live';
const talk = process.argv[2] === '--talk';
const [base, token, product, device, camera, otherToken, thirdToken, speakerLog] = process.argv.slice(live || talk ? 3 : 2);
if (!camera || (talk && !speakerLog)) {
    console.error('usage: console_test.mjs [--live] BASE TOKEN PRODUCT DEVICE CAMERA\n' +
        '       console_test.mjs --talk BASE TOKEN PRODUCT DEVICE CAMERA TOKEN_1002 TOKEN_1003 SPEAKER_LOG');
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
    for (const op of ['pause', 'resume']) {
        await page.click(`#live-${op}`);
        await eventually(`trackControl ${op} result`, async () =>
            (await results(page)).some((r) => r.event.data && r.event.data.operation === 'interaction.trackControl' &&
                r.event.code === 200 && r.event.data.state === (op === 'pause' ? 'paused' : 'active')));
    }
    await page.click('#live-end');
    await page.waitForFunction(() => /^ended \(userHangup\)/.test(document.getElementById('session-state').textContent),
        null, WAIT);
    chk.check((await text(page, '#peer-state')) === 'closed', 'live view: the peer closed at the end');
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
if (live) {
    try {
        const frag = new URLSearchParams({ token, product, device, camera }).toString();
        const { page, problems, close } = await openPage(browser, frag);
        await page.click('#connect');
        await page.waitForFunction(() => document.getElementById('ws-status').textContent === 'open', null, WAIT);
        await liveViewTest(page);
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
