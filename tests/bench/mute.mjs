// mute.mjs - the mute measurement bench-talk (talk_mute.mjs) and bench-live
// (its own-mute part) share: the time from a mute command to the muted
// member's last packet forwarded to the camera, which igwd logs when the
// gate closes ("... its last packet forwarded at T", the media core's clock).
import { readFileSync } from 'node:fs';
import { sleep } from '../media/lib.mjs';

/**
 * cycles rounds: unmute() (from the second round), 800 ms for packets to
 * flow again, then mute(), which resolves to Date.now() just before its
 * command was sent; then the newest line of igwd's log (logPath) containing
 * `marker`, new since the mute, gives T. Resolves to the ms from the send to
 * T per round (0 when the last packet went before the send: packets are
 * 20 ms apart). Throws when no such line with a forwarded packet comes
 * within a second.
 */
export async function muteToSilence({ cycles, logPath, marker, mute, unmute }) {
    const lines = () => readFileSync(logPath, 'utf8').split('\n').filter((l) => l.includes(marker));
    const out = [];
    for (let i = 0; i < cycles; i++) {
        if (i > 0) await unmute();
        await sleep(800); // the gate open again and the floor back: packets flowing
        const before = lines().length;
        const sent = await mute();
        let l = [];
        for (let k = 0; k < 50 && (l = lines()).length === before; k++) await sleep(20);
        const m = l.length > before && l[l.length - 1].match(/last packet forwarded at (\d+)/);
        if (!m || Number(m[1]) === 0) throw new Error(`mute ${i}: no line "${marker}" with a forwarded packet`);
        out.push(Math.max(0, Number(m[1]) - sent));
    }
    return out;
}
