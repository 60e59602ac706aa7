import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../core/app-error';
import { DevicePool } from '../scheduler/device-pool';
import { ModelPool, ModelPoolOptions } from './model-pool';
import type { GenerateRequest } from '../rollout/sampling-schemas';

/**
 * A stand-in model server speaking the same IPC protocol: it "loads" any folder whose name does not
 * start with `bad`, answers with its pid and the folder, crashes on the message `crash`, and sleeps
 * (blocking, like sampling) on `slow`.
 */
const FAKE_SERVER = `
let dir = null;
process.on('message', (m) => {
  if (m.type === 'load') {
    if (m.dir.split('/').pop().startsWith('bad')) return process.send({ type: 'load_failed', message: 'no config.json in ' + m.dir });
    dir = m.dir;
    return process.send({ type: 'ready', contextLength: 16, source: dir });
  }
  const text = m.request.messages[0].content;
  if (text === 'crash') process.exit(3);
  if (text === 'slow') { const end = Date.now() + 300; while (Date.now() < end); }
  if (text === 'long') return process.send({ type: 'error', id: m.id, kind: 'context_length', message: 'too long', field: 'max_tokens' });
  if (text === 'garbage') return process.send({ type: 'result', id: m.id, result: { promptTokens: 'many', choices: [] } });
  process.send({ type: 'delta', id: m.id, index: 0, text: 'a', logprobs: null });
  process.send({ type: 'result', id: m.id, result: { promptTokens: 1, choices: [{ text: process.pid + ' ' + dir + ' ' + text, finishReason: 'stop', completionTokens: 1, logprobs: null }] } });
});
process.on('disconnect', () => process.exit(0));
`;

const request = (content: string): GenerateRequest => ({
  messages: [{ role: 'user', content }],
  n: 1,
  temperature: 1,
  topP: 1,
  stop: [],
  seed: 0,
  logprobs: false,
  stream: false,
});

describe('ModelPool', () => {
  let tmp: string;
  let pool: ModelPool;
  const make = (o: Partial<ModelPoolOptions> = {}) =>
    (pool = new ModelPool({
      entry: join(tmp, 'fake-server.cjs'),
      maxModels: 2,
      idleMs: 60_000,
      loadTimeoutMs: 10_000,
      requestTimeoutMs: 10_000,
      home: tmp,
      jobsDir: tmp,
      modelRoots: [tmp],
      ...o,
    }));
  /** Model servers on a device pool, one CPU slot each, as ModelPoolService places them. */
  const onPool = (devices: DevicePool): ModelPoolOptions['devices'] => ({
    acquire: (ms, server) => devices.acquire({ gpus: 0, cpu_slots: 1 }, ms, server),
    release: (ids) => devices.release(ids),
  });
  const answer = async (dir: string, content: string) => (await pool.generate(dir, request(content))).choices[0].text.split(' ');

  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'model-pool-'));
    writeFileSync(join(tmp, 'fake-server.cjs'), FAKE_SERVER);
  });
  afterEach(async () => pool?.close());
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('keeps one process per model and evicts the least recently used beyond the limit', async () => {
    make();
    const [pidA] = await answer('/m/a', 'x');
    const [pidB] = await answer('/m/b', 'x');
    expect((await answer('/m/a', 'y'))[0]).toBe(pidA);
    expect(pool.loaded()).toEqual(['/m/b', '/m/a']);
    await answer('/m/c', 'x');
    expect(pool.loaded().sort()).toEqual(['/m/a', '/m/c']);
    // b was evicted: asking again starts a new process.
    const [pidB2] = await answer('/m/b', 'x');
    expect(pidB2).not.toBe(pidB);
    expect(pool.loaded()).toHaveLength(2);
  });

  it('passes deltas through and serialises requests to one model in arrival order', async () => {
    make();
    const deltas: string[] = [];
    const order: string[] = [];
    const slow = pool.generate('/m/a', request('slow'), (_, text) => deltas.push(text)).then(() => order.push('slow'));
    const fast = pool.generate('/m/a', request('fast')).then(() => order.push('fast'));
    await Promise.all([slow, fast]);
    expect(order).toEqual(['slow', 'fast']);
    expect(deltas).toEqual(['a']);
  });

  it('fails the request of a crashed process with 503 and restarts it on the next one', async () => {
    make();
    const [pid] = await answer('/m/a', 'x');
    const crash = pool.generate('/m/a', request('crash'));
    const queued = pool.generate('/m/a', request('x'));
    await expect(crash).rejects.toMatchObject({ code: 'OT_ERR_MODEL_UNAVAILABLE', status: 503 });
    await expect(queued).rejects.toBeInstanceOf(AppError);
    expect(((await crash.catch((e: Error) => e)) as Error).message).toMatch(/exited \(code 3\)/);
    const [pid2] = await answer('/m/a', 'x');
    expect(pid2).not.toBe(pid);
  });

  it('reports a checkpoint that cannot load, and the caller’s errors with their field', async () => {
    make();
    await expect(pool.generate('/m/bad', request('x'))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_LOAD_FAILED', field: 'model' });
    await expect(pool.generate('/m/a', request('long'))).rejects.toMatchObject({ code: 'OT_ERR_CONTEXT_LENGTH_EXCEEDED', field: 'max_tokens' });
  });

  it('fails everything waiting on a model server whose message does not fit the protocol, names the field, and stops it', async () => {
    make();
    const [pid] = await answer('/m/a', 'x');
    const bad = pool.generate('/m/a', request('garbage'));
    await expect(bad).rejects.toMatchObject({ code: 'OT_ERR_INTERNAL' });
    expect(((await bad.catch((e: Error) => e)) as Error).message).toMatch(
      /^The model server for \/m\/a sent a message that does not fit its protocol \(result\.promptTokens: .*\); it was stopped$/,
    );
    const [pid2] = await answer('/m/a', 'x');
    expect(pid2).not.toBe(pid);
  });

  it('stops a model after its idle time and kills one that overruns a request', async () => {
    make({ idleMs: 100, requestTimeoutMs: 150 });
    await answer('/m/a', 'x');
    expect(pool.loaded()).toEqual(['/m/a']);
    await new Promise((r) => setTimeout(r, 400));
    expect(pool.loaded()).toEqual([]);
    await expect(pool.generate('/m/b', request('slow'))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_UNAVAILABLE' });
  });

  it('runs each model server on devices of the shared pool, waiting for a free slot, and gives them back on exit', async () => {
    const devices = new DevicePool([{ id: 'cpu:0', kind: 'cpu', name: 'c', memoryMb: null }]);
    make({ devices: onPool(devices) });
    await answer('/m/a', 'x');
    expect(devices.hasFree).toBe(false);
    // b waits for a's slot; a is idle-stopped by eviction only when the pool is full, so stop it by crashing it.
    const b = answer('/m/b', 'x');
    await new Promise((r) => setTimeout(r, 100));
    expect(pool.loaded().sort()).toEqual(['/m/a', '/m/b']);
    await expect(pool.generate('/m/a', request('crash'))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_UNAVAILABLE' });
    expect((await b)[1]).toBe('/m/b');
    await pool.close();
    expect(devices.idle).toBe(true);
  });

  it('gives an idle model server’s slot to a job that needs it, never the slot of one answering a request', async () => {
    const devices = new DevicePool([
      { id: 'cpu:0', kind: 'cpu', name: 'c', memoryMb: null },
      { id: 'cpu:1', kind: 'cpu', name: 'c', memoryMb: null },
    ]);
    make({ devices: onPool(devices) });
    await answer('/m/a', 'x');
    await answer('/m/b', 'x');
    expect(devices.modelServerDevices).toEqual(['cpu:0', 'cpu:1']);
    const slow = pool.generate('/m/b', request('slow'));
    // a is idle, b is sampling: a job needing one slot gets a's, one needing two gets nothing.
    expect(await devices.makeRoom({ gpus: 0, cpu_slots: 2 })).toBe(false);
    expect(await devices.makeRoom({ gpus: 0, cpu_slots: 1 })).toBe(true);
    devices.unreserve();
    expect(pool.loaded()).toEqual(['/m/b']);
    expect(devices.modelServerDevices).toEqual(['cpu:1']);
    expect((await slow).choices[0].text).toContain('/m/b slow');
  });

  it('answers 503 when no device frees up within the load time', async () => {
    const devices = new DevicePool([{ id: 'cpu:0', kind: 'cpu', name: 'c', memoryMb: null }]);
    devices.take(['cpu:0']); // a job holds the only slot
    make({ loadTimeoutMs: 100, devices: onPool(devices) });
    await expect(pool.generate('/m/a', request('x'))).rejects.toMatchObject({
      code: 'OT_ERR_MODEL_UNAVAILABLE',
      message: expect.stringMatching(/cannot start now: .*did not free up/),
    });
    expect(pool.loaded()).toEqual([]);
  });

  it('shuts every process down on close and refuses new work', async () => {
    make();
    await answer('/m/a', 'x');
    await answer('/m/b', 'x');
    const pids = [...pool.pids().values()];
    await pool.close();
    for (const pid of pids) expect(() => process.kill(pid!, 0)).toThrow();
    await expect(pool.generate('/m/a', request('x'))).rejects.toMatchObject({ code: 'OT_ERR_MODEL_UNAVAILABLE' });
  });
});
