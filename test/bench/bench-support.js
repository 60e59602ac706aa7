'use strict';
/**
 * What the HTTP-facing benchmarks share: a free port, a JSON call to the API, the commit of a checkout,
 * and the CPU a run used (this process, a server process, everything else on the machine), read from
 * /proc so a result says how busy the machine was while it was measured.
 */
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const net = require('node:net');

/** USER_HZ on Linux: /proc's CPU times are in these ticks. */
const HZ = 100;

function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
  });
}

/** `method path` on a server started by a benchmark, as `key`; a non-2xx answer throws with its body. */
async function api(server, key, method, path, body) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** The checkout's commit (worktrees included), or null outside git. */
function gitCommit(root) {
  try {
    return execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** CPU time so far of the machine, this process and, given its pid, a server process. */
function cpuSnapshot(serverPid) {
  const snap = { at: process.hrtime.bigint(), self: process.cpuUsage(), busy: NaN, server: undefined };
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    snap.busy = fields.slice(0, 8).reduce((a, b) => a + b, 0) - (fields[3] + (fields[4] || 0));
    if (serverPid) {
      const rest = readFileSync(`/proc/${serverPid}/stat`, 'utf8');
      const fieldsAfterName = rest.slice(rest.lastIndexOf(')') + 2).split(' ');
      snap.server = Number(fieldsAfterName[11]) + Number(fieldsAfterName[12]); // utime + stime
    }
  } catch {
    /* not Linux: the cores are unknown */
  }
  return snap;
}

/**
 * Cores used between two snapshots by the server (when the snapshots had one), by this process and by
 * every other process.
 */
function cpuDelta(a, b) {
  const seconds = Number(b.at - a.at) / 1e9;
  const self = (b.self.user - a.self.user + b.self.system - a.self.system) / 1e6;
  const busy = (b.busy - a.busy) / HZ;
  const server = a.server === undefined ? undefined : (b.server - a.server) / HZ;
  const r = (x) => Math.round((x / seconds) * 100) / 100;
  const others = Number.isFinite(busy) ? r(Math.max(0, busy - self - (Number.isFinite(server) ? server : 0))) : null;
  return { ...(server === undefined ? {} : { server_cores: r(server) }), bench_cores: r(self), other_cores: others };
}

module.exports = { api, cpuDelta, cpuSnapshot, freePort, gitCommit };
