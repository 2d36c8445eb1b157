// run_view.mjs - one live view of `make run`'s demo camera in headless
// Chromium through the public API, frames decoded (tests/ops/run_test.sh).
// env: IGW_BASE, IGW_DEMO, IGW_NETNS_ADDR (live_lib.mjs).
import { launch, Checker } from '../media/lib.mjs';
import { DEMO, app, openLiveView } from '../igwd/live_lib.mjs';

const c = new Checker();
let seq = 0;
const token = (p) => `${p}-${process.pid}-${++seq}`;

async function main() {
    const browser = await launch();
    const owner = await app(DEMO.user);
    const s = await openLiveView(c, owner, browser, 'make run\'s camera', token);
    const st = await s.v.waitFor((x) => x.framesDecoded > 0, 15000).catch((e) => e.stats);
    c.check(st && st.framesDecoded > 0, `make run's camera: frames decoded (${JSON.stringify(st)})`);
    await s.v.close();
    await browser.close();
    c.done('run view');
}

main().catch((e) => {
    console.error('run view: FAIL:', e && e.stack ? e.stack : e);
    process.exit(1);
});
