/**
 * A W&B offline run, laid out as the `wandb` SDK leaves one for `wandb sync`:
 *
 *     wandb/offline-run-YYYYMMDD_HHMMSS-<id>/
 *       run-<id>.wandb            the transaction log: `Record` protos (wandb/proto/wandb_internal.proto)
 *                                 in LevelDB log framing (32 KiB blocks, 7-byte record headers whose
 *                                 checksum is the IEEE CRC-32 of the type byte and data), after the
 *                                 7-byte header ":W&B", 0xBEE1, version 0
 *       files/config.yaml         `key: {value: …}` per top-level config key
 *       files/wandb-summary.json  the last value of every metric, `_step`, `_runtime`, `_timestamp`
 *       files/wandb-metadata.json
 *       files/output.log          the job's log
 *
 * The log holds a header, the run (id, project, entity, name, config, start time), metric definitions,
 * one history record per reported step, the console output, and at the end a summary, the exit code
 * and a final record.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { stringify as toYaml } from 'yaml';
import { decodeFields, ProtoWriter } from './protobuf';
import type { WandbMetric } from './wandb-stream';

// LevelDB log framing as wandb's datastore writes it.
const BLOCK = 32768;
const HEADER = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;
const STORE_HEADER = Buffer.from([0x3a, 0x57, 0x26, 0x42, 0xe1, 0xbe, 0x00]); // ":W&B", 0xBEE1 LE, version 0

/** Record fields (wandb_internal.proto `Record`). */
const R = { num: 1, history: 2, summary: 3, config: 5, metric: 12, outputRaw: 13, control: 16, run: 17, exit: 18, final: 20, header: 21 } as const;
/** `Control.mailbox_slot`: `wandb sync` waits for an answer to the run record only when it has one, as the SDK's do. */
const CONTROL_MAILBOX_SLOT = 4;

/** The step of the job's own series (RL steps, validations at step N); warm-up rows carry `sft/step`. */
export const WANDB_STEP_KEY = 'global_step';
const SFT_PREFIX = 'sft/';
const SFT_STEP_KEY = 'sft/step';

/** Appends records to a transaction log file with wandb's LevelDB-log framing. */
export class LevelDbLogWriter {
  private offset = 0;

  constructor(private readonly fd: number) {}

  static create(path: string): LevelDbLogWriter {
    const w = new LevelDbLogWriter(openSync(path, 'wx'));
    w.put(STORE_HEADER);
    return w;
  }

  private put(b: Buffer): void {
    writeSync(this.fd, b);
    this.offset += b.length;
  }

  private chunk(data: Buffer, type: number): void {
    const head = Buffer.alloc(HEADER);
    head.writeUInt32LE(crc32(data, crc32(Buffer.from([type]))) >>> 0, 0);
    head.writeUInt16LE(data.length, 4);
    head[6] = type;
    this.put(Buffer.concat([head, data]));
  }

  write(data: Buffer): void {
    let left = BLOCK - (this.offset % BLOCK);
    if (left < HEADER) {
      this.put(Buffer.alloc(left));
      left = BLOCK;
    }
    if (data.length + HEADER <= left) return this.chunk(data, FULL);
    let used = left - HEADER;
    this.chunk(data.subarray(0, used), FIRST);
    while (data.length - used > BLOCK - HEADER) {
      this.chunk(data.subarray(used, used + BLOCK - HEADER), MIDDLE);
      used += BLOCK - HEADER;
    }
    this.chunk(data.subarray(used), LAST);
  }

  close(): void {
    fsyncSync(this.fd);
    closeSync(this.fd);
  }
}

/** The records of a transaction log, each checked against its CRC; throws on a bad header or checksum. */
export function readLevelDbLog(file: Buffer): Buffer[] {
  if (file.length < HEADER || !file.subarray(0, HEADER).equals(STORE_HEADER)) throw new Error('wandb log: bad header');
  const out: Buffer[] = [];
  let pos = HEADER;
  let pending: Buffer[] | null = null;
  while (pos < file.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left;
      continue;
    }
    if (pos + HEADER > file.length) throw new Error(`wandb log: truncated record header at ${pos}`);
    const sum = file.readUInt32LE(pos);
    const len = file.readUInt16LE(pos + 4);
    const type = file[pos + 6];
    const data = file.subarray(pos + HEADER, pos + HEADER + len);
    if (data.length !== len) throw new Error(`wandb log: truncated record at ${pos}`);
    if (crc32(data, crc32(Buffer.from([type]))) >>> 0 !== sum) throw new Error(`wandb log: bad checksum at ${pos}`);
    pos += HEADER + len;
    if (type === FULL) out.push(Buffer.from(data));
    else if (type === FIRST) pending = [Buffer.from(data)];
    else if (type === MIDDLE && pending) pending.push(Buffer.from(data));
    else if (type === LAST && pending) {
      pending.push(Buffer.from(data));
      out.push(Buffer.concat(pending));
      pending = null;
    } else throw new Error(`wandb log: unexpected record type ${type} at ${pos}`);
  }
  return out;
}

const keyValue = (key: string, value: unknown) => new ProtoWriter().string(1, key).string(16, JSON.stringify(value));
const timestamp = (ms: number) => new ProtoWriter().varint(1, Math.floor(ms / 1000)).varint(2, Math.round((ms % 1000) * 1e6));

/** `[a-z0-9]{n}`, the shape of the ids the wandb SDK makes (run ids: 8). */
function newId(n = 8): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('');
}

function folderTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}_${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** One history row of a transaction log, decoded: its `_step` and items (values parsed from JSON). */
export interface WandbHistoryRow {
  step: number;
  items: Record<string, unknown>;
}

/** Field by field, what a record is: its type (the `Record` field number) and that field's bytes. */
export function recordType(record: Buffer): { type: number; body: Buffer } | null {
  for (const f of decodeFields(record)) if (f.field !== R.num && f.raw) return { type: f.field, body: f.raw };
  return null;
}

export function decodeHistory(body: Buffer): WandbHistoryRow {
  const items: Record<string, unknown> = {};
  let step = 0;
  for (const f of decodeFields(body)) {
    if (f.field === 1 && f.raw) {
      let key = '';
      let json = 'null';
      for (const g of decodeFields(f.raw)) {
        if (g.field === 1 && g.raw) key = g.raw.toString('utf8');
        else if (g.field === 16 && g.raw) json = g.raw.toString('utf8');
      }
      items[key] = JSON.parse(json);
    } else if (f.field === 2 && f.raw) {
      for (const g of decodeFields(f.raw)) if (g.field === 1 && g.varint !== undefined) step = Number(g.varint);
    }
  }
  return { step, items };
}

export interface WandbRunOptions {
  /** `<dir>/wandb/offline-run-…` is made (the SDK's `WANDB_DIR` layout). */
  dir: string;
  project: string;
  displayName: string;
  entity?: string;
  jobType?: string;
  tags?: string[];
  config: Record<string, unknown>;
  /** Carry over the rows of an earlier offline run in `dir` that pass this filter (a resumed job). */
  keep?: (step: number, name: string) => boolean;
}

/**
 * Writes one offline run. History rows are numbered `_step` = the job's step for its own series
 * (as verl logs `step=global_steps`); a warm-up's `sft/*` points, numbered by their own steps and
 * reported before RL starts, take the first `_step`s instead and shift the rest by as many, with
 * `sft/step` and `global_step` in every row and metric definitions that plot each series against
 * its own step.
 */
export class WandbOfflineRun {
  readonly runId: string;
  /** The run's folder, `<dir>/wandb/offline-run-…` (what `wandb sync` is given). */
  runDir: string;
  private readonly log: LevelDbLogWriter;
  private filesDir: string;
  private readonly startMs: number;
  /** The run continues the one an earlier attempt of the job wrote (same run id). */
  readonly continued: boolean;
  /** The history rows carried over from that attempt, each with `_step`, `_runtime`, `_timestamp`. */
  readonly keptRows: ReadonlyArray<Record<string, unknown>>;
  private num = 0;
  private nextStep = 0;
  private sftRows = 0;
  /** The metric definitions, in the order they were written. */
  private readonly metricList: WandbMetric[] = [];
  private readonly summaryValues: Record<string, unknown> = {};
  /** The summary the run ended with. */
  private finalSummary: Record<string, unknown> | null = null;
  private closed = false;

  private constructor(o: WandbRunOptions, prior: Prior | null) {
    this.runId = prior?.runId ?? newId();
    this.continued = prior !== null;
    this.keptRows = prior?.rows ?? [];
    this.startMs = prior?.startMs ?? Date.now();
    const root = join(o.dir, 'wandb');
    mkdirSync(root, { recursive: true });
    const finalDir = join(root, `offline-run-${folderTime(Date.now())}-${this.runId}`);
    // Built under a temporary name and renamed, so `wandb sync wandb/offline-run-*` never sees half a run.
    this.runDir = join(root, `.tmp-${this.runId}-${process.pid}`);
    rmSync(this.runDir, { recursive: true, force: true });
    this.filesDir = join(this.runDir, 'files');
    mkdirSync(this.filesDir, { recursive: true });
    this.log = LevelDbLogWriter.create(join(this.runDir, `run-${this.runId}.wandb`));
    if (prior) {
      for (const r of prior.records) this.writeRaw(r);
      this.num = prior.num;
      this.sftRows = prior.sftRows;
      this.nextStep = prior.nextStep;
      this.metricList.push(...prior.metrics);
      Object.assign(this.summaryValues, prior.summary);
      writeFileSync(join(this.filesDir, 'output.log'), prior.output);
    } else {
      this.record(R.header, new ProtoWriter().message(1, new ProtoWriter().string(1, 'opentinker')));
      const run = new ProtoWriter()
        .string(1, this.runId)
        .string(2, o.entity ?? '')
        .string(3, o.project)
        .message(4, configRecord(o.config))
        .string(7, o.jobType ?? '')
        .string(8, o.displayName);
      for (const tag of o.tags ?? []) run.string(10, tag);
      run.string(13, hostname()).message(17, timestamp(this.startMs));
      this.record(R.run, run, new ProtoWriter().string(CONTROL_MAILBOX_SLOT, newId(12)));
      this.define({ name: WANDB_STEP_KEY });
      this.define({ name: SFT_STEP_KEY });
      this.record(R.metric, new ProtoWriter().string(2, `${SFT_PREFIX}*`).string(4, SFT_STEP_KEY).message(6, new ProtoWriter().varint(3, true)));
      writeFileSync(join(this.filesDir, 'output.log'), '');
    }
    writeFileSync(join(this.filesDir, 'config.yaml'), toYaml(Object.fromEntries(Object.entries(o.config).map(([k, v]) => [k, { value: v }]))));
    writeFileSync(
      join(this.filesDir, 'wandb-metadata.json'),
      JSON.stringify({ program: 'opentinker', host: hostname(), startedAt: new Date(this.startMs).toISOString(), args: [] }, null, 2),
    );
    rmSync(finalDir, { recursive: true, force: true });
    renameSync(this.runDir, finalDir);
    this.runDir = finalDir;
    this.filesDir = join(finalDir, 'files');
    this.writeSummaryFile();
  }

  /** A new run in `o.dir`, or the continuation of the latest one there when `o.keep` is given. */
  static open(o: WandbRunOptions): WandbOfflineRun {
    const root = join(o.dir, 'wandb');
    const earlier = existsSync(root)
      ? readdirSync(root)
          .filter((n) => n.startsWith('offline-run-'))
          .sort()
      : [];
    let prior = null;
    if (o.keep && earlier.length > 0) prior = readPrior(join(root, earlier[earlier.length - 1]), o.keep);
    const run = new WandbOfflineRun(o, prior);
    for (const old of earlier) if (join(root, old) !== run.runDir) rmSync(join(root, old), { recursive: true, force: true });
    return run;
  }

  private writeRaw(record: Buffer): void {
    this.log.write(record);
  }

  private record(type: number, body: ProtoWriter, control?: ProtoWriter): void {
    this.num++;
    const record = new ProtoWriter().varint(R.num, this.num).message(type, body);
    if (control) record.message(R.control, control);
    this.writeRaw(record.finish());
  }

  /**
   * A metric definition record: a step key (`defined`), or a series plotted against its step key, marked
   * `expanded_from_glob` as the SDK writes the series a glob definition covers.
   */
  private define(metric: WandbMetric): void {
    this.metricList.push(metric);
    const body = new ProtoWriter().string(1, metric.name);
    if (metric.stepMetric === undefined) body.message(6, new ProtoWriter().varint(3, true));
    else body.string(4, metric.stepMetric).varint(10, true);
    this.record(R.metric, body);
  }

  /** The metric definitions so far: the step keys first, then each series with its step key. */
  get metrics(): readonly WandbMetric[] {
    return this.metricList;
  }

  /** The run's summary: the last value of every key, and `_wandb.runtime` (whole seconds). */
  get summary(): Record<string, unknown> {
    return this.finalSummary ?? { ...this.summaryValues, _wandb: { runtime: Math.floor((Date.now() - this.startMs) / 1000) } };
  }

  /** One history row: the values the job reported for `step`. Returns the row as written (null once closed). */
  logMetrics(step: number, values: Record<string, number>): Record<string, number> | null {
    if (this.closed) return null;
    const now = Date.now();
    const names = Object.keys(values);
    const sft = names.length > 0 && names.every((n) => n.startsWith(SFT_PREFIX));
    for (const name of names) {
      if (this.metricList.some((m) => m.name === name)) continue;
      this.define({ name, stepMetric: name.startsWith(SFT_PREFIX) ? SFT_STEP_KEY : WANDB_STEP_KEY });
    }
    let rowStep: number;
    if (sft) rowStep = this.sftRows++;
    else rowStep = step + this.sftRows;
    // `_step` only grows (the W&B backend drops rows that go back); a repeated step joins the next row.
    rowStep = Math.max(rowStep, this.nextStep);
    this.nextStep = rowStep + 1;
    const row: Record<string, number> = { ...values, [sft ? SFT_STEP_KEY : WANDB_STEP_KEY]: step, _step: rowStep, _runtime: (now - this.startMs) / 1000, _timestamp: now / 1000 };
    const history = new ProtoWriter();
    for (const [k, v] of Object.entries(row)) history.message(1, keyValue(k, v));
    history.message(2, new ProtoWriter().varint(1, rowStep));
    this.record(R.history, history);
    Object.assign(this.summaryValues, row);
    this.writeSummaryFile();
    return row;
  }

  /** A line of the job's console output (`files/output.log` and an `output_raw` record). */
  logLine(line: string): void {
    if (this.closed) return;
    const text = line.endsWith('\n') ? line : `${line}\n`;
    appendFileSync(join(this.filesDir, 'output.log'), text);
    this.record(R.outputRaw, new ProtoWriter().varint(1, 1).message(2, timestamp(Date.now())).string(3, text));
  }

  private writeSummaryFile(): void {
    writeFileSync(join(this.filesDir, 'wandb-summary.json'), JSON.stringify(this.summary));
  }

  /** Ends the run: its summary, the exit code (0: finished, else failed) and the final record. */
  close(exitCode: number): void {
    if (this.closed) return;
    this.closed = true;
    this.finalSummary = this.summary;
    const runtime = (this.finalSummary._wandb as { runtime: number }).runtime;
    const summary = new ProtoWriter();
    for (const [k, v] of Object.entries(this.finalSummary)) summary.message(1, keyValue(k, v));
    this.record(R.summary, summary);
    this.record(R.exit, new ProtoWriter().varint(1, exitCode).varint(2, runtime));
    this.record(R.final, new ProtoWriter());
    this.log.close();
    this.writeSummaryFile();
  }
}

function configRecord(config: Record<string, unknown>): ProtoWriter {
  const w = new ProtoWriter();
  for (const [k, v] of Object.entries(config)) w.message(1, keyValue(k, v));
  return w;
}

interface Prior {
  runId: string;
  startMs: number;
  records: Buffer[];
  /** The highest record number among them. */
  num: number;
  sftRows: number;
  nextStep: number;
  metrics: WandbMetric[];
  summary: Record<string, unknown>;
  /** The kept history rows' items. */
  rows: Array<Record<string, unknown>>;
  output: string;
}

/** What an earlier run of the same job left: its records, less the history rows `keep` drops. */
function readPrior(runDir: string, keep: (step: number, name: string) => boolean): Prior | null {
  const file = readdirSync(runDir).find((n) => n.startsWith('run-') && n.endsWith('.wandb'));
  if (!file) return null;
  const runId = file.slice(4, -6);
  let records: Buffer[];
  try {
    records = readLevelDbLog(readFileSync(join(runDir, file)));
  } catch {
    // A log cut short by a killed runner still has its complete records first; without those, start over.
    return null;
  }
  const kept: Buffer[] = [];
  const metrics: WandbMetric[] = [];
  const rows: Array<Record<string, unknown>> = [];
  const summary: Record<string, unknown> = {};
  let startMs = Date.now();
  let sftRows = 0;
  let nextStep = 0;
  let output = '';
  let num = 0;
  for (const record of records) {
    const r = recordType(record);
    if (!r) continue;
    for (const f of decodeFields(record)) if (f.field === R.num && f.varint !== undefined) num = Math.max(num, Number(f.varint));
    if (r.type === R.summary || r.type === R.exit || r.type === R.final) continue;
    if (r.type === R.run) {
      for (const f of decodeFields(r.body)) {
        if (f.field === 17 && f.raw) for (const g of decodeFields(f.raw)) if (g.field === 1 && g.varint !== undefined) startMs = Number(g.varint) * 1000;
      }
    }
    if (r.type === R.metric) {
      const metric: Partial<WandbMetric> = {};
      for (const f of decodeFields(r.body)) {
        if (f.field === 1 && f.raw) metric.name = f.raw.toString('utf8');
        if (f.field === 4 && f.raw) metric.stepMetric = f.raw.toString('utf8');
      }
      // Glob definitions (`sft/*`) have no name: the run writes them again itself.
      if (metric.name !== undefined) metrics.push(metric as WandbMetric);
    }
    if (r.type === R.outputRaw) {
      for (const f of decodeFields(r.body)) if (f.field === 3 && f.raw) output += f.raw.toString('utf8');
    }
    if (r.type === R.history) {
      const row = decodeHistory(r.body);
      const sft = SFT_STEP_KEY in row.items;
      const jobStep = Number(row.items[sft ? SFT_STEP_KEY : WANDB_STEP_KEY]);
      const names = Object.keys(row.items).filter((k) => !k.startsWith('_') && k !== WANDB_STEP_KEY && k !== SFT_STEP_KEY);
      if (!names.some((n) => keep(jobStep, n))) continue;
      if (sft) sftRows++;
      nextStep = Math.max(nextStep, row.step + 1);
      Object.assign(summary, row.items);
      rows.push(row.items);
    }
    kept.push(record);
  }
  return { runId, startMs, records: kept, num, sftRows, nextStep, metrics, summary, rows, output };
}
