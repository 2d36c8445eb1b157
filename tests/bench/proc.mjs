// proc.mjs - what the benchmarks read of a server process from /proc.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

// CPU time so far in microseconds: utime + stime, fields 14 and 15 of
// /proc/<pid>/stat (the command name in parentheses may hold spaces).
export function cpuUs(pid) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
}

// Resident set size in KiB.
export function rssKiB(pid) {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
}
