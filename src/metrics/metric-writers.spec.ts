import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32c, maskedCrc32c } from './crc32c';
import { consoleLine, redactSecrets } from './metric-loggers';
import { decodeFields, ProtoWriter } from './protobuf';
import { decodeScalarEvent, readTfRecords, TensorBoardWriter, tfRecord } from './tensorboard-writer';
import { decodeHistory, LevelDbLogWriter, readLevelDbLog, recordType, WandbOfflineRun } from './wandb-offline-run';

describe('CRC-32C', () => {
  // RFC 3720 appendix B.4 and the "123456789" check value of the Castagnoli polynomial.
  it.each([
    [Buffer.from('123456789'), 0xe3069283],
    [Buffer.alloc(32, 0), 0x8a9136aa],
    [Buffer.alloc(32, 0xff), 0x62a8ab43],
    [Buffer.from(Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e],
    [Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c],
  ])('matches the known vector %#', (data, expected) => {
    expect(crc32c(data)).toBe(expected);
  });

  it('masks as TensorFlow does', () => {
    const crc = 0xe3069283;
    expect(maskedCrc32c(Buffer.from('123456789'))).toBe(((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0);
  });
});

describe('protobuf writer', () => {
  it('decodes what it encodes: varints (negative int64 too), doubles, floats, strings, nested messages', () => {
    const buf = new ProtoWriter().varint(1, 300).varint(2, -1).double(3, 1.5).float(4, 0).string(5, 'ä/b').message(6, new ProtoWriter().varint(1, 7)).varint(7, 0).finish();
    const f = decodeFields(buf);
    expect(f.map((x) => x.field)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(f[0].varint).toBe(300n);
    expect(BigInt.asIntN(64, f[1].varint!)).toBe(-1n);
    expect(f[2].raw!.readDoubleLE(0)).toBe(1.5);
    expect(f[3].raw!.readFloatLE(0)).toBe(0);
    expect(f[4].raw!.toString('utf8')).toBe('ä/b');
    expect(decodeFields(f[5].raw!)[0].varint).toBe(7n);
    // 300 is 0xAC 0x02 on the wire, after the key byte 0x08.
    expect([...buf.subarray(0, 3)]).toEqual([0x08, 0xac, 0x02]);
  });

  it('refuses a truncated message', () => {
    expect(() => decodeFields(Buffer.from([0x0a, 0x05, 0x61]))).toThrow(/truncated/);
  });
});

describe('TensorBoard event files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ot-tb-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('frames records with masked CRCs and detects corruption', () => {
    const rec = tfRecord(Buffer.from('hello'));
    expect(readTfRecords(rec).map((b) => b.toString())).toEqual(['hello']);
    const bad = Buffer.from(rec);
    bad[13] ^= 1;
    expect(() => readTfRecords(bad)).toThrow(/bad data CRC/);
  });

  it('writes a file version then one event per report, values as float32', () => {
    const w = TensorBoardWriter.open(dir);
    w.write(1, { 'actor/pg_loss': 0.1, 'critic/score/mean': 1 }, 1000.5);
    w.write(2, { 'actor/pg_loss': -0.25 }, 1001);
    w.close();
    const [file] = readdirSync(dir);
    expect(file).toMatch(/^events\.out\.tfevents\.\d+\..+\.\d+\.0$/);
    const records = readTfRecords(readFileSync(join(dir, file)));
    expect(records).toHaveLength(3);
    expect(decodeScalarEvent(records[0])).toBeNull();
    expect(
      decodeFields(records[0])
        .find((f) => f.field === 3)!
        .raw!.toString(),
    ).toBe('brain.Event:2');
    expect(decodeScalarEvent(records[1])).toEqual({ wallTime: 1000.5, step: 1, values: { 'actor/pg_loss': Math.fround(0.1), 'critic/score/mean': 1 } });
    expect(decodeScalarEvent(records[2])).toEqual({ wallTime: 1001, step: 2, values: { 'actor/pg_loss': -0.25 } });
  });

  it('on resume keeps what the filter keeps from earlier files and replaces them with one', () => {
    const first = TensorBoardWriter.open(dir);
    for (let s = 1; s <= 4; s++) first.write(s, { 'reward/mean': s });
    first.write(5, { 'sft/loss': 9 });
    first.close();
    const second = TensorBoardWriter.open(dir, (step, tag) => step <= 2 || tag.startsWith('sft/'));
    second.write(3, { 'reward/mean': 30 });
    second.close();
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    const events = readTfRecords(readFileSync(join(dir, files[0])))
      .map(decodeScalarEvent)
      .filter((e) => e !== null);
    expect(events.map((e) => [e!.step, e!.values])).toEqual([
      [1, { 'reward/mean': 1 }],
      [2, { 'reward/mean': 2 }],
      [5, { 'sft/loss': 9 }],
      [3, { 'reward/mean': 30 }],
    ]);
  });
});

describe('W&B offline runs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ot-wandb-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('frames LevelDB-log records across 32 KiB blocks (FIRST/MIDDLE/LAST, zero padding) and reads them back', () => {
    const path = join(dir, 'x.wandb');
    const w = LevelDbLogWriter.create(path);
    const sizes = [10, 32768 - 7 - 7 - 17 - 7 - 3, 5, 70_000, 1, 32761];
    const payloads = sizes.map((n, i) => Buffer.alloc(n, i + 1));
    for (const p of payloads) w.write(p);
    w.close();
    const file = readFileSync(path);
    expect(file.subarray(0, 7)).toEqual(Buffer.from([0x3a, 0x57, 0x26, 0x42, 0xe1, 0xbe, 0]));
    expect(readLevelDbLog(file)).toEqual(payloads);
    const bad = Buffer.from(file);
    bad[20] ^= 0xff;
    expect(() => readLevelDbLog(bad)).toThrow(/checksum/);
  });

  const history = (runDir: string) => {
    const log = readdirSync(runDir).find((n) => n.endsWith('.wandb'))!;
    return readLevelDbLog(readFileSync(join(runDir, log)))
      .map(recordType)
      .filter((r) => r?.type === 2)
      .map((r) => decodeHistory(r!.body));
  };

  it('writes the folder layout, history rows at the job step, a warm-up on its own step, summary and config', () => {
    const run = WandbOfflineRun.open({ dir, project: 'p', displayName: 'n', config: { batch_size: 2, model: { preset: 'tiny' } } });
    run.logMetrics(1, { 'sft/loss': 2 });
    run.logMetrics(2, { 'sft/loss': 1 });
    run.logMetrics(0, { 'val/accuracy': 0.5 });
    run.logMetrics(1, { 'actor/pg_loss': 0.25 });
    run.logLine('hello');
    run.close(0);
    const [name] = readdirSync(join(dir, 'wandb'));
    expect(name).toMatch(new RegExp(`^offline-run-\\d{8}_\\d{6}-${run.runId}$`));
    const runDir = join(dir, 'wandb', name);
    expect(readdirSync(join(runDir, 'files')).sort()).toEqual(['config.yaml', 'output.log', 'wandb-metadata.json', 'wandb-summary.json']);
    expect(readFileSync(join(runDir, 'files', 'config.yaml'), 'utf8')).toMatch(/^batch_size:\n {2}value: 2\n/);
    expect(readFileSync(join(runDir, 'files', 'output.log'), 'utf8')).toBe('hello\n');
    const summary = JSON.parse(readFileSync(join(runDir, 'files', 'wandb-summary.json'), 'utf8'));
    expect(summary).toMatchObject({ 'actor/pg_loss': 0.25, 'val/accuracy': 0.5, 'sft/loss': 1, _step: 3 });
    const rows = history(runDir);
    expect(rows.map((r) => [r.step, r.items._step, r.items.global_step ?? null, r.items['sft/step'] ?? null])).toEqual([
      [0, 0, null, 1],
      [1, 1, null, 2],
      [2, 2, 0, null],
      [3, 3, 1, null],
    ]);
    const records = readLevelDbLog(readFileSync(join(runDir, `run-${run.runId}.wandb`)));
    const types = records.map((r) => recordType(r)!.type);
    expect(types[0]).toBe(21); // header
    expect(types[1]).toBe(17); // run
    expect(types.slice(-3)).toEqual([3, 18, 20]); // summary, exit, final
    // The run record has a control mailbox slot (Record.control = 16, Control.mailbox_slot = 4): `wandb sync` waits forever without one.
    const control = decodeFields(records[1]).find((f) => f.field === 16);
    expect(
      decodeFields(control!.raw!)
        .find((f) => f.field === 4)
        ?.raw?.toString(),
    ).toMatch(/^[a-z0-9]{12}$/);
    // Every series is defined against its own step key, a warm-up's too (the SDK expands globs itself).
    expect(run.metrics).toEqual([
      { name: 'global_step' },
      { name: 'sft/step' },
      { name: 'sft/loss', stepMetric: 'sft/step' },
      { name: 'val/accuracy', stepMetric: 'global_step' },
      { name: 'actor/pg_loss', stepMetric: 'global_step' },
    ]);
    expect(decodeHistory(recordType(records.at(-3)!)!.body).items._wandb).toEqual({ runtime: expect.any(Number) });
  });

  it('continues the run of an earlier attempt on resume, without the rows after the resume step', () => {
    const first = WandbOfflineRun.open({ dir, project: 'p', displayName: 'n', config: {} });
    for (let s = 1; s <= 4; s++) first.logMetrics(s, { 'reward/mean': s });
    // A killed runner leaves no summary, exit or final record.
    const id = first.runId;
    const second = WandbOfflineRun.open({ dir, project: 'p', displayName: 'n', config: {}, keep: (step) => step <= 2 });
    expect(second.runId).toBe(id);
    second.logMetrics(3, { 'reward/mean': 30 });
    second.close(0);
    const folders = readdirSync(join(dir, 'wandb'));
    expect(folders).toHaveLength(1);
    expect(history(join(dir, 'wandb', folders[0])).map((r) => [r.step, r.items['reward/mean']])).toEqual([
      [1, 1],
      [2, 2],
      [3, 30],
    ]);
  });

  it('starts over from a log it cannot read', () => {
    const root = join(dir, 'wandb', 'offline-run-20250101_000000-abcdefgh');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'run-abcdefgh.wandb'), 'not a log');
    const run = WandbOfflineRun.open({ dir, project: 'p', displayName: 'n', config: {}, keep: () => true });
    expect(run.runId).not.toBe('abcdefgh');
    run.close(1);
    expect(readdirSync(join(dir, 'wandb'))).toHaveLength(1);
  });
});

describe('console line and config', () => {
  it("prints verl's LocalLogger line (Python repr of the values)", () => {
    expect(consoleLine(3, { 'actor/pg_loss': 0.125, 'critic/score/mean': 1, 'actor/lr': 1e-7 })).toBe('step:3 - actor/pg_loss:0.125 - critic/score/mean:1.0 - actor/lr:1e-07');
  });

  it('keeps credentials out of the run config', () => {
    expect(redactSecrets({ environment: { id: 'x', token: 's' }, api_key: 'k', hf_token: 'h', list: [{ password: 'p', a: 1 }], rollout: { max_new_tokens: 4 } })).toEqual({
      environment: { id: 'x' },
      list: [{ a: 1 }],
      rollout: { max_new_tokens: 4 },
    });
  });
});
