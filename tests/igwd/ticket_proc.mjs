#!/usr/bin/env node
// ticket_proc.mjs - a processor that holds its frame tickets, for ai_test.sh's
// ticket part: it speaks docs/ai.md's processor protocol as any plugged
// model would, but consumes each ticket only when told. It writes every
// line igwd sends it to $TICKET_DIR/lines.jsonl; on a ticket it writes
// $TICKET_DIR/ticket.N and consumes once $TICKET_DIR/go.N exists; it asks
// for take N+1 after consumed N (N from 1). Its media ports are bound and
// what arrives there is dropped (it judges tickets, not pictures).
import dgram from 'node:dgram';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const DIR = process.env.TICKET_DIR;
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const bind = () => new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.on('message', () => {});
    s.bind(0, '127.0.0.1', () => resolve(s));
});
const audio = await bind();
const video = await bind();
let n = 1;
say({ op: 'ready', audioPort: audio.address().port, videoPort: video.address().port, pairs: '' });
say({ op: 'take' });
createInterface({ input: process.stdin }).on('line', (line) => {
    appendFileSync(`${DIR}/lines.jsonl`, `${line}\n`);
    const m = JSON.parse(line);
    if (m.op === 'ticket') {
        const k = n;
        writeFileSync(`${DIR}/ticket.${k}`, line);
        const wait = setInterval(() => {
            if (!existsSync(`${DIR}/go.${k}`)) return;
            clearInterval(wait);
            say({ op: 'consume', ticket: m.ticket, frame: m.frame });
        }, 20);
    } else if (m.op === 'consumed' && n < 2) {
        n++;
        say({ op: 'take' });
    }
}).on('close', () => process.exit(0));
