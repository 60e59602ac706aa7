import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { describeCheckpoint, listCheckpoints, resolveCheckpointStep, walkFiles } from './checkpoint-store';
import { checkpointTar } from './checkpoint-tar';

interface Entry {
  name: string;
  type: string;
  size: number;
  bytes: Buffer;
}

async function untar(stream: Readable): Promise<Entry[]> {
  const entries: Entry[] = [];
  const ex = extract();
  ex.on('error', () => undefined); // pipeline() reports it; streamx emits it again after
  ex.on('entry', (header, body, next) => {
    const chunks: Buffer[] = [];
    body.on('error', () => undefined);
    body.on('data', (c: unknown) => chunks.push(c as Buffer));
    body.on('end', () => {
      entries.push({ name: header.name, type: header.type ?? 'file', size: header.size ?? 0, bytes: Buffer.concat(chunks) });
      next();
    });
  });
  await pipeline(stream, ex as unknown as Writable);
  return entries;
}

describe('checkpoint store and tar', () => {
  let jobsDir: string;
  const job = '11111111-2222-4333-8444-555555555555';
  const ckpt = (step: string) => join(jobsDir, job, 'work', 'checkpoints', step);

  beforeEach(() => {
    jobsDir = mkdtempSync(join(tmpdir(), 'ckpt-store-'));
    for (const s of ['step-2', 'step-10', 'step-11.tmp']) mkdirSync(join(ckpt(s), 'model'), { recursive: true });
    writeFileSync(join(ckpt('step-2'), 'model', 'config.json'), '{}');
    writeFileSync(join(ckpt('step-10'), 'model', 'config.json'), '{"a":1}');
    writeFileSync(join(ckpt('step-10'), 'model', 'model.safetensors'), Buffer.alloc(300_000, 3));
    mkdirSync(join(ckpt('step-10'), 'adapter'));
    writeFileSync(join(ckpt('step-10'), 'adapter', 'adapter_config.json'), '{}');
    writeFileSync(join(ckpt('step-10'), 'empty.txt'), '');
    writeFileSync(join(ckpt('step-10'), 'trainer_state.json'), JSON.stringify({ step: 10, created: '2026-01-02T03:04:05.000Z' }));
    writeFileSync(join(jobsDir, 'secret'), 'outside');
    symlinkSync(join(jobsDir, 'secret'), join(ckpt('step-10'), 'link'));
    // Not a checkpoint: a file with a step-like name, and a name that is no step.
    writeFileSync(join(jobsDir, job, 'work', 'checkpoints', 'step-12'), 'x');
    mkdirSync(ckpt('step-01'));
  });
  afterEach(() => rmSync(jobsDir, { recursive: true, force: true }));

  it('lists complete checkpoints only, with sizes, adapter flag and creation time', async () => {
    const list = await listCheckpoints(jobsDir, job);
    expect(list.map((c) => c.step)).toEqual([2, 10]);
    const ten = list[1];
    expect(ten.hasAdapter).toBe(true);
    expect(ten.hasModel).toBe(true);
    expect(list[0].hasAdapter).toBe(false);
    expect(ten.createdAt).toBe(Date.parse('2026-01-02T03:04:05.000Z'));
    expect(ten.files.map((f) => f.path)).toEqual(['adapter/adapter_config.json', 'empty.txt', 'model/config.json', 'model/model.safetensors', 'trainer_state.json']);
    expect(ten.sizeBytes).toBe(2 + 0 + 7 + 300_000 + ten.files[4].size);
    expect(await listCheckpoints(jobsDir, 'no-such-job')).toEqual([]);
  });

  it('resolves latest and numbers, and refuses anything else', async () => {
    expect(await resolveCheckpointStep(jobsDir, job, 'latest')).toBe(10);
    expect(await resolveCheckpointStep(jobsDir, job, '2')).toBe(2);
    expect(await resolveCheckpointStep(jobsDir, job, '3')).toBeNull();
    expect(await resolveCheckpointStep(jobsDir, job, '11')).toBeNull();
    for (const bad of ['../step-2', '2/..', '02', '-1', '1e1', 'step-2', '']) expect(await resolveCheckpointStep(jobsDir, job, bad)).toBeNull();
    expect(await describeCheckpoint(jobsDir, job, 11)).toBeNull();
  });

  it('streams a tar whose entries read back byte for byte, links left out', async () => {
    const dir = ckpt('step-10');
    const entries = await untar(checkpointTar(dir, await walkFiles(dir), 'step-10'));
    expect(entries.map((e) => `${e.type}:${e.name}`)).toEqual([
      'directory:step-10/',
      'directory:step-10/adapter/',
      'file:step-10/adapter/adapter_config.json',
      'file:step-10/empty.txt',
      'directory:step-10/model/',
      'file:step-10/model/config.json',
      'file:step-10/model/model.safetensors',
      'file:step-10/trainer_state.json',
    ]);
    const weights = entries.find((e) => e.name.endsWith('model.safetensors'))!;
    expect(weights.size).toBe(300_000);
    expect(weights.bytes.equals(Buffer.alloc(300_000, 3))).toBe(true);
    expect(entries.find((e) => e.name.endsWith('config.json') && e.name.includes('model'))!.bytes.toString()).toBe('{"a":1}');
    expect(entries.some((e) => e.name.includes('link'))).toBe(false);
  });

  it('puts the files at the top of the archive when the root is empty', async () => {
    const dir = ckpt('step-10');
    const entries = await untar(checkpointTar(dir, await walkFiles(dir), ''));
    expect(entries.map((e) => `${e.type}:${e.name}`)).toEqual([
      'directory:adapter/',
      'file:adapter/adapter_config.json',
      'file:empty.txt',
      'directory:model/',
      'file:model/config.json',
      'file:model/model.safetensors',
      'file:trainer_state.json',
    ]);
  });

  it('fails the stream when a file vanishes mid-download', async () => {
    const dir = ckpt('step-10');
    const files = await walkFiles(dir);
    rmSync(join(dir, 'model', 'model.safetensors'));
    await expect(untar(checkpointTar(dir, files, 'step-10'))).rejects.toThrow();
  });
});
