/**
 * What Linux's /proc says of a process: its state letter and its parent. The one reader of
 * `/proc/PID/stat`, for the hang-up rules (hang-ups.ts) and the locks (lock.ts); off Linux, or
 * where the file cannot be read, nothing is known.
 */
import { readFileSync, readlinkSync } from 'node:fs';

/** A process as /proc/PID/stat shows it: `state` is R, S, D, Z (zombie), X (dead), … */
export interface ProcStat {
  state: string;
  ppid: number;
}

/** The state and parent of a process, or undefined where /proc cannot tell. */
export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces or parentheses itself.
  const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (!state || ppid === undefined) return undefined;
  return { state, ppid: Number(ppid) };
}

/**
 * Whether a process has ended though its entry remains: a zombie (its parent has not reaped
 * it yet: `timeout -s KILL`, a container's first process that never reaps) or one being
 * removed. Its files, sockets and database sessions are closed already.
 */
export function hasEnded(pid: number): boolean {
  const s = procStat(pid)?.state;
  return s === 'Z' || s === 'X' || s === 'x';
}

let scope: string | undefined;

/**
 * Where this process's pids mean something: the machine's boot and its pid namespace (a
 * container has its own), or '' off Linux. Two processes of one host name and one scope see
 * the same processes; of one host name and two scopes (containers sharing a name, or a
 * restart between), a pid of the one says nothing to the other.
 */
export function processScope(): string {
  if (scope === undefined) {
    try {
      const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
      scope = `${boot}/${readlinkSync('/proc/self/ns/pid')}`;
    } catch {
      scope = '';
    }
  }
  return scope;
}
