// console_test.mjs BASE TOKEN PRODUCT DEVICE CAMERA - the console page in
// headless Chromium against a running igwd (console_test.sh starts it, the
// services and the device that answers the first device.action):
// prefilled from the URL fragment, log in, register, WebSocket push, a
// device.action whose interaction.result appears and is acknowledged, an
// error envelope shown verbatim, the pull fallback, a bad token's 401, no
// token in any URL, no CSP violation or script error.
import { launch, sleep, Checker } from '../media/lib.mjs';

const live = process.argv[2] === '--live';
const [base, token, product, device, camera] = process.argv.slice(live ? 3 : 2);
if (!camera) {
    console.error('usage: console_test.mjs [--live] BASE TOKEN PRODUCT DEVICE CAMERA');
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

const browser = await launch();
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
