// revoke_test.mjs - a live view outlives no right (issue 24, item 1): a
// granted user's Chromium live view, established and decoding frames, ends
// `rightsRevoked` within 2 s of its grant being deleted, and again of the
// user being deactivated, and its frames stop at once. Run by live_test.sh
// with igwd's periodic recheck far away (IGW_RIGHTS_RECHECK_MS), so only
// the igw_rights notification can end it in time.
//
// env: live_lib.mjs's, and IGW_PG_DSN (the test's database).
import { execFileSync } from 'node:child_process';
import { launch, sleep, Checker } from '../media/lib.mjs';
import { DEMO, target, app, accepted, startCamera, openLiveView } from './live_lib.mjs';

const BOUND_MS = 2000; // the bound docs/sessions.md states
const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;
const psql = (sql) => execFileSync('psql', [process.env.IGW_PG_DSN, '-qAtc', sql], { encoding: 'utf8' }).trim();
const user = DEMO.otherUser.userId;
const grant = `INSERT INTO device_grants (product_id, device_name, user_id) VALUES ('${target.productID}', '${target.deviceName}', ${user}) ON CONFLICT DO NOTHING`;
const frames = async (s) => (await s.v.stats()).framesDecoded;

/** The grantee's established live view, decoding. */
async function establishedView(a, browser, name) {
    const s = await openLiveView(c, a, browser, name, token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `${name}: frames decoded (${JSON.stringify(st)})`);
    const t = token('state');
    await accepted(c, a, { msgToken: t, method: 'interaction.mediaState', sessionId: s.sid, params: { mediaRevision: 1, state: 'connected' } },
        `${name}: mediaState connected`);
    c.check(!!(await a.state(s.sid, 'established')), `${name}: established`);
    return s;
}

/** Runs the change (SQL) and waits for the session's row to say ended; its
 * reason and the time from the change's commit to it. */
async function revoke(s, sql) {
    const t0 = Date.now();
    psql(sql); // returns after the commit
    const committed = Date.now();
    for (;;) {
        const row = psql(`SELECT state || ' ' || coalesce(reason, '') FROM sessions WHERE session_id = '${s.sid}'`);
        if (row.startsWith('ended') || Date.now() - committed > 10000)
            return { row, ms: Date.now() - committed, psqlMs: committed - t0 };
        await sleep(20);
    }
}

/** The viewer decodes nothing more once its session ended. */
async function framesStop(s, name) {
    await sleep(300); // what was in flight at the close
    const f1 = await frames(s);
    await sleep(1500);
    const f2 = await frames(s);
    c.check(f2 - f1 <= 1, `${name}: frames stop after the end (${f1} -> ${f2})`);
}

async function main() {
    const cam = startCamera(process.env.IGW_VCAM, '[vcam] ');
    const browser = await launch();
    const grantee = await app(DEMO.otherUser);
    psql(grant);

    // ---- the grant deleted ----------------------------------------------------------------
    const s1 = await establishedView(grantee, browser, 'granted viewer');
    let r = await revoke(s1, `DELETE FROM device_grants WHERE product_id = '${target.productID}' AND device_name = '${target.deviceName}' AND user_id = ${user}`);
    c.check(r.row === 'ended rightsRevoked', `grant deleted: the session ended rightsRevoked (${r.row})`);
    c.check(r.ms < BOUND_MS, `grant deleted: ended ${r.ms} ms after the commit (bound ${BOUND_MS} ms)`);
    console.log(`revoke test: grant deleted -> ended in ${r.ms} ms`);
    const ev = await grantee.state(s1.sid, 'ended', 5000);
    c.check(ev && ev.data.reason === 'rightsRevoked', `grant deleted: the application is told (${JSON.stringify(ev)})`);
    await framesStop(s1, 'grant deleted');
    const again = await grantee.command({ msgToken: token('x'), method: 'interaction.open', target,
        params: { purpose: 'ipcLiveView', cameraId: DEMO.camera.cameraId } });
    c.check(again.status === 403, `grant deleted: a new open is refused (${JSON.stringify(again.body)})`);

    // ---- the user deactivated -------------------------------------------------------------
    psql(grant);
    const s2 = await establishedView(grantee, browser, 'viewer again');
    r = await revoke(s2, `UPDATE users SET active = false WHERE user_id = ${user}`);
    c.check(r.row === 'ended rightsRevoked', `user deactivated: the session ended rightsRevoked (${r.row})`);
    c.check(r.ms < BOUND_MS, `user deactivated: ended ${r.ms} ms after the commit (bound ${BOUND_MS} ms)`);
    console.log(`revoke test: user deactivated -> ended in ${r.ms} ms`);
    await framesStop(s2, 'user deactivated');
    psql(`UPDATE users SET active = true WHERE user_id = ${user}`);

    await s1.v.close();
    await s2.v.close();
    await browser.close();
    cam.kill('SIGTERM');
    await cam.waitExit(10000).catch(() => cam.kill('SIGKILL')); // the next test's camera takes its client id
    c.done('revoke test');
}

main().catch((e) => {
    console.error('revoke test: FAIL:', e && e.stack ? e.stack : e);
    process.exit(1);
});
