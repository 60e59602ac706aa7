import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess } from './managed-process';

/** A child that reports its pid and its own child's, then ignores SIGTERM when told to (argv via env). */
const CHILD = `
const { spawn } = require('node:child_process');
const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
if (process.env.STUBBORN) process.on('SIGTERM', () => console.error('ignoring SIGTERM'));
process.on('message', (m) => process.send({ echo: m, pid: process.pid, grandchild: grandchild.pid }));
console.error('line one\\nline two');
setInterval(() => {}, 1000);
`;

/** Running, not a zombie waiting for whoever adopted it to reap it. */
const alive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('ManagedProcess', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'managed-process-'));
    writeFileSync(join(dir, 'child.cjs'), CHILD);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const start = async (env: NodeJS.ProcessEnv = {}) => {
    const p = new ManagedProcess({ entry: join(dir, 'child.cjs'), env: { ...process.env, ...env } });
    const reply = new Promise<{ echo: unknown; pid: number; grandchild: number }>((resolve) => p.child.once('message', resolve as never));
    p.send({ hello: 1 });
    return { p, reply: await reply };
  };

  it('talks over IPC, and a stop ends the whole process group with SIGTERM', async () => {
    const { p, reply } = await start();
    expect(reply.echo).toEqual({ hello: 1 });
    expect(alive(reply.grandchild)).toBe(true);
    const exit = await p.stop(10_000);
    expect(exit).toMatchObject({ code: null, signal: 'SIGTERM' });
    expect(exit.stderrTail).toEqual(['line one', 'line two']);
    expect(p.running).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(reply.grandchild)).toBe(false);
    p.send({ dropped: true }); // gone: ignored, no throw
  });

  it('kills the group with SIGKILL once the grace period is over, or at once with no grace', async () => {
    const stubborn = await start({ STUBBORN: '1' });
    const t0 = Date.now();
    const exit = await stubborn.p.stop(300);
    expect(exit.signal).toBe('SIGKILL');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);

    const other = await start({ STUBBORN: '1' });
    void other.p.stop(60_000);
    expect((await other.p.stop(0)).signal).toBe('SIGKILL');
  });
});
