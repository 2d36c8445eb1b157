// transfer_test.mjs - sessions that outlive their endpoint (issue 26, items 5
// and 6), with shortened clocks (live_test.sh starts igwd with
// endpoint_ttl_ms 6000, endpoint_grace_ms 2000, rights_recheck_ms 1000): a
// Chromium live view survives 8 endpoint lifetimes moved by
// interaction.control endpointControl from each new endpoint, with no gap
// in its frames; the old endpoint's unacknowledged delivery is pulled once
// on the new one; commands of the old endpoint are refused; the refusals
// (another user, a wrong transferFrom, past the grace); and the session
// ends endpointExpired once transfers stop.
//
// env: live_lib.mjs's.
import { launch, sleep, Checker } from '../media/lib.mjs';
import { DEMO, app, accepted, startCamera, openLiveView, call } from './live_lib.mjs';

const TTL_MS = 6000;
const GRACE_MS = 2000;
const RECHECK_MS = 1000;
const LIFETIMES = 8;
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const frames = async (v) => (await v.stats()).framesDecoded;
const transferCmd = (sid, from, t = token('move')) =>
    ({ msgToken: t, method: 'interaction.control', sessionId: sid, params: { operation: 'endpointControl', args: { transferFrom: from } } });

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const browser = await launch();
    let aAt = Date.now();
    let a = await app(DEMO.user);
    const s = await openLiveView(c, a, browser, 'viewer', token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `viewer: frames decoded (${JSON.stringify(st)})`);
    await accepted(c, a, { msgToken: token('state'), method: 'interaction.mediaState', sessionId: s.sid,
        params: { mediaRevision: 1, state: 'connected' } }, 'viewer: mediaState connected');
    c.check(!!(await a.state(s.sid, 'established')), 'viewer: established');

    // ---- refusals, nothing moved --------------------------------------------------------------
    const other = await app(DEMO.otherUser);
    let r = await other.command(transferCmd(s.sid, a.ep));
    c.check(r.status === 404 && !r.body.data.accepted, `another user cannot take the session (${JSON.stringify(r.body)})`);
    const mine = await app(DEMO.user);
    r = await mine.command(transferCmd(s.sid, mine.ep));
    c.check(r.status === 404, `transferFrom not the session's endpoint: unknown session (${JSON.stringify(r.body)})`);
    r = await a.command(transferCmd(s.sid, a.ep));
    c.check(r.status === 400 && r.body.data.path === '/command/params/args/transferFrom',
        `a transfer to the endpoint it is on is refused (${JSON.stringify(r.body)})`);
    r = await mine.command({ msgToken: token('x'), method: 'interaction.control', sessionId: s.sid,
        params: { operation: 'endpointControl', args: {} } });
    c.check(r.status === 400 && r.body.data.path === '/command/params/args/transferFrom', `transferFrom is required (${JSON.stringify(r.body)})`);

    // ---- an unacknowledged delivery of the old endpoint moves with the session ---------------
    const tp = token('resume'); // on an active track: its result is a refusal, and changes nothing
    await accepted(c, a, { msgToken: tp, method: 'interaction.trackControl', sessionId: s.sid,
        params: { trackId: 'video-1', operation: 'resume', mediaRevision: 1 } }, 'a result left unacknowledged');
    let pending = null;
    for (let i = 0; i < 50 && !pending; i++, await sleep(100)) { // pulled, never acked
        const p = await call(DEMO.user, '/api/v1/im/interaction/events', { endpointId: a.ep, limit: 32 });
        pending = (p.body.data.list || []).find((x) => x.event.msgToken === tp);
    }
    c.check(pending, 'the result is pending on the old endpoint');

    // ---- 8 lifetimes: each new endpoint takes the session over before the old one lapses ------
    let moved = 0, gapless = true, worst = Infinity;
    let f0 = await frames(s.v), t0 = Date.now();
    for (let i = 0; i < LIFETIMES; i++) {
        await sleep(Math.max(0, aAt + TTL_MS - 1000 - Date.now())); // renewed a second before its endpoint expires
        const nextAt = Date.now();
        const next = await app(DEMO.user);
        const t = token('move');
        const mr = await next.command(transferCmd(s.sid, a.ep, t));
        const res = mr.status === 200 ? await next.result(t, 5000) : null;
        if (mr.status === 200 && res && res.code === 200 && res.data.result.transferFrom === a.ep &&
            res.data.result.endpointId === next.ep && res.data.state === 'established')
            moved++;
        else
            c.check(false, `lifetime ${i + 1}: moved (${JSON.stringify(mr.body)} ${JSON.stringify(res)})`);
        if (i === 0) {
            c.check(res && res.data.result.redelivered >= 1, `the first move carries the pending delivery (${JSON.stringify(res && res.data.result)})`);
            const got = await next.wait((e) => e.msgToken === tp, 3000);
            c.check(got && got.sessionId === s.sid, `the old endpoint's unacknowledged result is pulled on the new one (${JSON.stringify(got)})`);
            const p = await call(DEMO.user, '/api/v1/im/interaction/events', { endpointId: a.ep, limit: 32 });
            c.check(p.status !== 200 || !(p.body.data.list || []).some((x) => x.deliveryId === pending.deliveryId),
                `never again on the old endpoint (${JSON.stringify(p.body)})`);
            r = await a.command({ msgToken: token('x'), method: 'interaction.trackControl', sessionId: s.sid,
                params: { trackId: 'video-1', operation: 'pause', mediaRevision: 1 } });
            c.check(r.status === 404, `the old endpoint's commands are refused (${JSON.stringify(r.body)})`);
            r = await next.command(transferCmd(s.sid, a.ep, t));
            c.check(r.status === 200 && r.body.data.replay === true, `the transfer replayed: replay (${JSON.stringify(r.body)})`);
        }
        const f1 = await frames(s.v), t1 = Date.now();
        const fps = (f1 - f0) / ((t1 - t0) / 1000);
        worst = Math.min(worst, fps);
        if (fps < 15) gapless = false;
        f0 = f1;
        t0 = t1;
        a = next;
        aAt = nextAt;
    }
    c.check(moved === LIFETIMES, `the live view was moved ${moved} of ${LIFETIMES} times`);
    c.check(gapless, `no media gap across the moves (worst ${worst.toFixed(1)} frames/s between two moves)`);
    console.log(`transfer: ${moved} moves, worst ${worst.toFixed(1)} frames/s`);

    // ---- past the grace: no transfer, and the session ends endpointExpired -------------------------
    // Its endpoint gone, the end has nobody to tell: its media stopping shows
    // it (live_test.sh reads the row's reason, endpointExpired).
    const lastAt = aAt; // the last endpoint's registration: it expires TTL_MS later
    const stall = (async () => {
        let prev = await frames(s.v), prevAt = Date.now();
        for (let i = 0; i < 150; i++) {
            await sleep(200);
            const f = await frames(s.v);
            if (f > prev) {
                prev = f;
                prevAt = Date.now();
            } else if (Date.now() - prevAt >= 1000) {
                return prevAt;
            }
        }
        return 0;
    })();
    await sleep(Math.max(0, lastAt + TTL_MS + GRACE_MS + 100 - Date.now()));
    const late = await app(DEMO.user);
    r = await late.command(transferCmd(s.sid, a.ep));
    c.check((r.status === 410 && r.body.data.path === '/command/params/args/transferFrom') || r.status === 404,
        `a transfer past the grace is refused: expired, or the session is gone (${JSON.stringify(r.body)})`);
    const stalledAt = await stall;
    const endedIn = stalledAt - lastAt;
    const bound = TTL_MS + GRACE_MS + RECHECK_MS;
    c.check(stalledAt > 0 && endedIn < bound + 1000,
        `nobody renewed it: its media stopped within endpoint expiry + grace + recheck (${endedIn} ms after its endpoint's registration, bound ${bound} ms)`);
    c.check(stalledAt === 0 || endedIn > TTL_MS + GRACE_MS - 500, `not before the grace ended (${endedIn} ms)`);
    console.log(`transfer: the unrenewed session ended ${endedIn} ms after its endpoint's registration (endpoint ${TTL_MS} + grace ${GRACE_MS} + recheck ${RECHECK_MS})`);
    await browser.close();
    cam.kill('SIGTERM');
    await cam.waitExit(10000).catch(() => cam.kill('SIGKILL')); // the next test's camera takes its client id
    c.done('transfer');
}

main().catch((e) => { console.error(e); process.exit(1); });
