#!/usr/bin/env node
// ai_tap.mjs - the processor bench-ai gives igwd (processor_bin): it runs
// the real igw-proc (BENCH_PROC_REAL) with the same arguments and passes the
// protocol's lines both ways untouched, timing two of them into
// BENCH_TAP_LOG (one JSON line each):
//   {"take":ms}     from the processor's take to igwd's granted or refused:
//                   the owner's re-read of its facts and the lock (and two
//                   pipe hops);
//   {"caption":ms}  from the end of the utterance's speech (the caption's
//                   endMs) to the caption line leaving the processor.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import readline from 'node:readline';

const log = process.env.BENCH_TAP_LOG;
const child = spawn(process.env.BENCH_PROC_REAL, process.argv.slice(2), { stdio: ['pipe', 'pipe', 'inherit'] });
let takeAt = 0;
const note = (o) => log && appendFileSync(log, JSON.stringify(o) + '\n');

readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const now = Date.now();
    try {
        const m = JSON.parse(line);
        if (m.op === 'take') takeAt = performance.now();
        if (m.op === 'caption' && m.endMs) note({ caption: now - m.endMs });
    } catch { /* passed on as it is */ }
    process.stdout.write(line + '\n');
});
readline.createInterface({ input: process.stdin }).on('line', (line) => {
    try {
        const m = JSON.parse(line);
        if ((m.op === 'granted' || m.op === 'refused') && takeAt) {
            note({ take: performance.now() - takeAt, op: m.op });
            takeAt = 0;
        }
    } catch { /* passed on as it is */ }
    child.stdin.write(line + '\n');
});
process.stdin.on('end', () => child.stdin.end());
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
