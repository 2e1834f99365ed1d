// Helpers for bench/run.mjs: timed child processes, peak RSS, statistics, the loopback
// service, machine facts and table formatting.

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const NODE = process.execPath;
export const TIME = '/usr/bin/time';

/** Children currently running, so an interrupted bench can stop exactly those. */
export const running = new Set();

/** Keeps the last `max` characters of a stream (stderr is drained, only its tail is kept). */
function tailCollector(max = 16_384) {
  let text = '';
  return {
    push(chunk) {
      text += chunk.toString('utf8');
      if (text.length > 2 * max) text = text.slice(-max);
    },
    get value() {
      return text.slice(-max);
    },
  };
}

/**
 * Runs one child process with stdin ignored and stdout/stderr piped (no TTY), timing it from
 * spawn to exit with process.hrtime.bigint(). With `rssFile`, the command runs under
 * `/usr/bin/time -f '%M %U %S' -o rssFile`, and the peak RSS (KiB) and CPU time (user + system,
 * ms) of the command are read back.
 * Resolves to { ms, startedAt (ms since the epoch), rssKiB, cpuMs, code, signal, stdout: Buffer, stderr: string (tail), timedOut }.
 */
export async function runProc(cmd, args, { env, rssFile, timeoutMs = 60_000 } = {}) {
  const file = rssFile ? TIME : cmd;
  const argv = rssFile ? ['-f', '%M %U %S', '-o', rssFile, cmd, ...args] : args;
  const out = [];
  const err = tailCollector();
  const t0 = process.hrtime.bigint();
  // The spawn on the clock bench/service.mjs stamps its first request with.
  const startedAt = performance.timeOrigin + performance.now();
  const child = spawn(file, argv, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  let t1 = 0n;
  child.on('exit', () => {
    t1 = process.hrtime.bigint();
  });
  const [code, signal] = await once(child, 'close');
  clearTimeout(timer);
  running.delete(child);
  if (t1 === 0n) t1 = process.hrtime.bigint();
  let rssKiB;
  let cpuMs;
  if (rssFile) {
    try {
      const lines = readFileSync(rssFile, 'utf8').trim().split('\n');
      const [rss, user, sys] = lines[lines.length - 1].split(' ').map(Number);
      rssKiB = Number.isFinite(rss) ? rss : undefined;
      cpuMs = Number.isFinite(user) && Number.isFinite(sys) ? (user + sys) * 1000 : undefined;
    } catch {
      rssKiB = undefined;
    }
    rmSync(rssFile, { force: true });
  }
  return {
    ms: Number(t1 - t0) / 1e6,
    startedAt,
    rssKiB,
    cpuMs,
    code,
    signal,
    stdout: Buffer.concat(out),
    stderr: err.value,
    timedOut,
  };
}

/** The median of a list of numbers (the mean of the middle two for an even count). */
export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Starts bench/service.mjs in its own process; resolves to { port, baseUrl, call, stop }. */
export async function startService({ latencyMs = 0, ledger = false } = {}) {
  const args = latencyMs > 0 ? ['--latency', String(latencyMs)] : [];
  if (ledger) args.push('--ledger');
  const child = spawn(NODE, [`${ROOT}bench/service.mjs`, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const err = tailCollector();
  child.stderr.on('data', (c) => err.push(c));
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    const onData = (c) => {
      buf += c.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve(JSON.parse(buf.slice(0, nl)).port);
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`service exited (${code}) before listening: ${err.value}`)),
    );
  });
  const agent = new http.Agent({ keepAlive: false });
  /** One request to the service's control routes; resolves to the parsed answer. */
  function call(method, path) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path, agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(body));
          } catch (e) {
            reject(e);
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
  }
  async function stop() {
    if (child.exitCode !== null || child.signalCode !== null) return err.value;
    child.kill('SIGTERM');
    await once(child, 'close');
    running.delete(child);
    return err.value;
  }
  return { port, baseUrl: `http://127.0.0.1:${port}`, call, stop, child };
}

/** The machine, for RESULTS.md. */
export function machineInfo() {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpu = m[1].trim();
  } catch {}
  let memKiB = os.totalmem() / 1024;
  try {
    const m = /^MemTotal:\s*(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) memKiB = Number(m[1]);
  } catch {}
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT })
      .toString()
      .trim();
    if (dirty) commit += ' (src/ has uncommitted changes)';
  } catch {}
  return {
    cpu,
    cores: os.availableParallelism?.() ?? os.cpus().length,
    memory: `${(memKiB / 1024 / 1024).toFixed(1)} GiB`,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    commit,
  };
}

/** Formats milliseconds for the table. */
export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return 'n/a';
  return ms >= 10_000
    ? `${(ms / 1000).toFixed(1)} s`
    : ms >= 1000
      ? `${(ms / 1000).toFixed(2)} s`
      : `${ms.toFixed(1)} ms`;
}

/** Formats KiB as MiB. */
export function fmtMiB(kib) {
  return Number.isFinite(kib) ? `${(kib / 1024).toFixed(1)} MiB` : 'n/a';
}

/** Formats a ratio. */
export function fmtRatio(r) {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : '—';
}

/** A row count as 10k / 100k / 1M. */
export function fmtRows(n) {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

/** A markdown table with padded columns (readable on a terminal too). */
export function markdownTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)]
    .join('\n')
    .concat('\n');
}
