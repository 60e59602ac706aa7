/**
 * TensorBoard event files: TFRecord framing (length, masked CRC-32C of the length, data, masked
 * CRC-32C of the data) around `Event` protos (tensorboard/compat/proto/event.proto: wall_time = 1,
 * step = 2, file_version = 3, summary = 5; summary.proto: Summary.value = 1, Value.tag = 1,
 * Value.simple_value = 2). A scalar is written as `simple_value` (a float), the form PyTorch's and
 * verl's `SummaryWriter.add_scalar` write, so the tags are the metric names as reported
 * (`actor/pg_loss`, `critic/score/mean`, …) and TensorBoard groups them by their first segment.
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { maskedCrc32c } from './crc32c';
import { decodeFields, ProtoWriter } from './protobuf';

/** Marks a file whose events TensorBoard reads with restart handling by `SessionLog` (not by step order). */
const FILE_VERSION = 'brain.Event:2';

export interface ScalarEvent {
  wallTime: number;
  step: number;
  values: Record<string, number>;
}

/** One TFRecord: the framing TensorBoard's reader checks (a bad CRC stops it reading the file). */
export function tfRecord(data: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeBigUInt64LE(BigInt(data.length), 0);
  head.writeUInt32LE(maskedCrc32c(head.subarray(0, 8)), 8);
  const tail = Buffer.alloc(4);
  tail.writeUInt32LE(maskedCrc32c(data), 0);
  return Buffer.concat([head, data, tail]);
}

/** The records of a TFRecord file; throws where a length or a CRC does not check. */
export function readTfRecords(file: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let pos = 0;
  while (pos < file.length) {
    if (pos + 12 > file.length) throw new Error(`tfrecord: truncated header at ${pos}`);
    const len = Number(file.readBigUInt64LE(pos));
    if (file.readUInt32LE(pos + 8) !== maskedCrc32c(file.subarray(pos, pos + 8))) throw new Error(`tfrecord: bad length CRC at ${pos}`);
    const start = pos + 12;
    if (start + len + 4 > file.length) throw new Error(`tfrecord: truncated record at ${pos}`);
    const data = file.subarray(start, start + len);
    if (file.readUInt32LE(start + len) !== maskedCrc32c(data)) throw new Error(`tfrecord: bad data CRC at ${pos}`);
    out.push(data);
    pos = start + len + 4;
  }
  return out;
}

export function encodeScalarEvent(e: ScalarEvent): Buffer {
  const summary = new ProtoWriter();
  for (const [tag, value] of Object.entries(e.values)) summary.message(1, new ProtoWriter().string(1, tag).float(2, value));
  return new ProtoWriter().double(1, e.wallTime).varint(2, e.step).message(5, summary).finish();
}

function encodeFileVersion(wallTime: number): Buffer {
  return new ProtoWriter().double(1, wallTime).string(3, FILE_VERSION).finish();
}

/** A decoded event: its scalars (float32 values), or null for other events (the file version). */
export function decodeScalarEvent(data: Buffer): ScalarEvent | null {
  let wallTime = 0;
  let step = 0;
  let values: Record<string, number> | null = null;
  for (const f of decodeFields(data)) {
    if (f.field === 1 && f.raw) wallTime = f.raw.readDoubleLE(0);
    else if (f.field === 2 && f.varint !== undefined) step = Number(BigInt.asIntN(64, f.varint));
    else if (f.field === 5 && f.raw) {
      values = {};
      for (const v of decodeFields(f.raw)) {
        if (v.field !== 1 || !v.raw) continue;
        let tag = '';
        let value: number | undefined;
        for (const g of decodeFields(v.raw)) {
          if (g.field === 1 && g.raw) tag = g.raw.toString('utf8');
          else if (g.field === 2 && g.raw) value = g.raw.readFloatLE(0);
        }
        if (value !== undefined) values[tag] = value;
      }
    }
  }
  return values ? { wallTime, step, values } : null;
}

const isEventFile = (name: string) => name.startsWith('events.out.tfevents.');

/**
 * Appends scalar events to one event file in `dir` (named as TensorBoard's writers name them, so
 * `tensorboard --logdir` finds it). Each event is written with one `write` call; TensorBoard reads a
 * file that is still growing.
 */
export class TensorBoardWriter {
  readonly path: string;
  private fd: number | null;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.fd = fd;
  }

  /**
   * A new event file in `dir`. With `keep`, the events of the files already there (a previous attempt
   * of the job) are carried over as far as `keep` allows and those files removed: TensorBoard then
   * shows what the job's API series show after a resume, with no points of the lost attempt.
   */
  static open(dir: string, keep?: (step: number, tag: string) => boolean): TensorBoardWriter {
    const now = Date.now() / 1000;
    const earlier = readdirSync(dir).filter(isEventFile).sort();
    const name = `events.out.tfevents.${Math.floor(now)}.${hostname().replace(/[^A-Za-z0-9_-]/g, '_')}.${process.pid}.${earlier.length}`;
    const temp = join(dir, `.${name}.tmp`);
    const fd = openSync(temp, 'wx');
    writeSync(fd, tfRecord(encodeFileVersion(now)));
    if (keep) {
      for (const old of earlier) {
        for (const record of readTfRecords(readFileSync(join(dir, old)))) {
          const e = decodeScalarEvent(record);
          if (!e) continue;
          const values = Object.fromEntries(Object.entries(e.values).filter(([tag]) => keep(e.step, tag)));
          if (Object.keys(values).length > 0) writeSync(fd, tfRecord(encodeScalarEvent({ ...e, values })));
        }
      }
    }
    fsyncSync(fd);
    renameSync(temp, join(dir, name));
    if (keep) for (const old of earlier) rmSync(join(dir, old), { force: true });
    return new TensorBoardWriter(join(dir, name), fd);
  }

  write(step: number, values: Record<string, number>, wallTime = Date.now() / 1000): void {
    if (this.fd === null) return;
    writeSync(this.fd, tfRecord(encodeScalarEvent({ wallTime, step, values })));
  }

  close(): void {
    if (this.fd === null) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = null;
  }
}
