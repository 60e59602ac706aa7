import { create, toBinary } from '@bufbuild/protobuf';
import { bigintInRange, int64Bytes, readInt64AsNumbers } from './binary';
import { TinkerWireError } from './errors';
import { ArrayRecordSchema, BatchedTensorSchema, ForwardBackwardOutputSchema, type ArrayRecord } from './generated/tinker_pb';
import { decodeMessage } from './message';
import { dtypeName, dtypeValue, readValues, writeValues, type PlainTensor, type TensorDType, type TensorValues } from './tensor';

/**
 * The result of a forward or forward_backward future: protobuf `ForwardBackwardOutput`, the only form
 * SDK 0.25+ reads (it refuses a JSON one). Per datum, named outputs (`logprobs` of each target token,
 * `elementwise_loss`, ...) travel batched: one `BatchedTensor` per name holding every datum's values
 * back to back with byte offsets. The SDK merges the results of a request's chunks by metric suffix.
 */

/** The reductions the SDK knows in a metric key `name:reduction`; it drops metrics with any other. */
export const METRIC_REDUCTIONS = ['mean', 'sum', 'min', 'max', 'slack', 'hash2', 'unique'] as const;

const METRIC_KEY = new RegExp(`^[^:]+:(${METRIC_REDUCTIONS.join('|')})$`);

/** One output of one datum: float32 values, or values in a named dtype with the shape of one position. */
export type OutputTensorInput = Float32Array | number[] | { dtype: TensorDType; data: TensorValues | ArrayLike<number>; trailingShape?: number[] };

/** What a server computed for one forward/forward_backward request. */
export interface ForwardBackwardResult {
  /** Per datum, in request order: its outputs by name. Every datum must have the same names. */
  lossFnOutputs: Array<Record<string, OutputTensorInput>>;
  /** `name:reduction` keys, e.g. `loss:sum` (the SDK's `forward_backward_custom` needs it). */
  metrics: Record<string, number>;
  /** Default `ArrayRecord`. */
  lossFnOutputType?: string;
}

interface Normalized {
  dtype: TensorDType;
  data: TensorValues | ArrayLike<number>;
  trailingShape: number[];
}

function normalize(value: OutputTensorInput): Normalized {
  if (value instanceof Float32Array || Array.isArray(value)) return { dtype: 'float32', data: value, trailingShape: [] };
  return { dtype: value.dtype, data: value.data, trailingShape: value.trailingShape ?? [] };
}

/** Choices for {@link encodeForwardBackwardOutput}. */
export interface ForwardBackwardEncodeOptions {
  /**
   * Let an output's dtype or trailing shape differ between datums (ragged outputs). Each change starts
   * a new ArrayRecord, which SDK 0.24.1 and later read per record; earlier SDKs apply the first
   * record's layout to all and misread the rest, so the default refuses such a result.
   */
  mixedLayouts?: boolean;
}

/**
 * A result as protobuf bytes, for `retrieve_future` with `Content-Type: application/x-protobuf`. Datums
 * whose outputs share dtype and trailing shape go in one ArrayRecord; with `mixedLayouts`, a change
 * starts the next one (the SDK concatenates records in order).
 *
 * @example
 * ```ts
 * const bytes = encodeForwardBackwardOutput({ lossFnOutputs: [{ logprobs: new Float32Array([-0.5, -1.25]) }], metrics: { 'loss:sum': 1.75 } });
 * ```
 */
export function encodeForwardBackwardOutput(result: ForwardBackwardResult, options: ForwardBackwardEncodeOptions = {}): Uint8Array {
  for (const key of Object.keys(result.metrics)) {
    if (!METRIC_KEY.test(key)) {
      throw new TinkerWireError(
        'TINKER_WIRE_CANNOT_ENCODE',
        `metric key ${JSON.stringify(key)} is not name:reduction with a reduction of ${METRIC_REDUCTIONS.join(', ')}`,
        'metrics',
      );
    }
  }
  const outputs = result.lossFnOutputs.map((datum) => Object.entries(datum).map(([name, value]) => [name, normalize(value)] as const));
  const names = outputs.length > 0 ? outputs[0].map(([name]) => name).sort() : [];
  const type = result.lossFnOutputType ?? 'ArrayRecord';
  const records: ArrayRecord[] = [];
  let start = 0;
  for (let i = 1; i <= outputs.length; i++) {
    if (i < outputs.length) {
      const these = outputs[i].map(([name]) => name).sort();
      if (these.join('\0') !== names.join('\0')) {
        throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `datum ${i} has outputs [${these.join(', ')}], datum 0 has [${names.join(', ')}]`, `loss_fn_outputs[${i}]`);
      }
      if (sameLayout(outputs[i - 1], outputs[i])) continue;
      if (!options.mixedLayouts) {
        throw new TinkerWireError(
          'TINKER_WIRE_CANNOT_ENCODE',
          `datum ${i} has another dtype or trailing shape than datum ${i - 1} for some output; SDKs before 0.24.1 misread that (pass mixedLayouts for newer ones)`,
          `loss_fn_outputs[${i}]`,
        );
      }
    }
    records.push(buildRecord(outputs.slice(start, i), names, start, type));
    start = i;
  }
  return toBinary(ForwardBackwardOutputSchema, create(ForwardBackwardOutputSchema, { lossFnOutputType: type, lossFnOutputs: records, metrics: { ...result.metrics } }));
}

type DatumOutputs = ReadonlyArray<readonly [string, Normalized]>;

function sameLayout(a: DatumOutputs, b: DatumOutputs): boolean {
  const byName = new Map(a);
  return b.every(([name, t]) => {
    const other = byName.get(name)!;
    return other.dtype === t.dtype && other.trailingShape.join(',') === t.trailingShape.join(',');
  });
}

function buildRecord(datums: DatumOutputs[], names: string[], first: number, type: string): ArrayRecord {
  const fields: ArrayRecord['fields'] = {};
  for (const name of names) {
    const parts = datums.map((d, k) => {
      const t = new Map(d).get(name)!;
      const per = t.trailingShape.reduce((p, n) => p * n, 1);
      const field = `loss_fn_outputs[${first + k}].${name}`;
      if (t.trailingShape.some((n) => !Number.isInteger(n) || n < 0))
        throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `trailing shape [${t.trailingShape.join(', ')}] is not a shape`, field);
      if (per === 0 ? t.data.length !== 0 : t.data.length % per !== 0) {
        throw new TinkerWireError('TINKER_WIRE_CANNOT_ENCODE', `${t.data.length} values are not a whole number of positions of shape [${t.trailingShape.join(', ')}]`, field);
      }
      return { t, bytes: writeValues(t.data, t.dtype, field) };
    });
    const { dtype, trailingShape } = parts[0].t;
    const offsets = [0];
    for (const p of parts) offsets.push(offsets[offsets.length - 1] + p.bytes.byteLength);
    const data = new Uint8Array(offsets[offsets.length - 1]);
    parts.forEach((p, k) => data.set(p.bytes, offsets[k]));
    fields[name] = create(BatchedTensorSchema, { data, offsets: int64Bytes(offsets, name), dtype: dtypeValue(dtype), trailingShape: trailingShape.map(BigInt) });
  }
  return create(ArrayRecordSchema, { typeTag: type, fields, numDatums: BigInt(datums.length) });
}

/** A forward/backward result read back: per datum, each output with its shape `[positions, ...trailing]`. */
export interface ForwardBackwardOutputPlain {
  lossFnOutputType: string;
  lossFnOutputs: Array<Record<string, PlainTensor>>;
  metrics: Record<string, number>;
}

/**
 * Protobuf `ForwardBackwardOutput` bytes read the way the SDK reads them (for a TypeScript client and
 * for tests): records concatenated, byte offsets cut each datum's values, bfloat16 widened to float32.
 *
 * @example
 * ```ts
 * const out = decodeForwardBackwardOutput(bytes);
 * const logprobs = out.lossFnOutputs[0].logprobs.data;
 * ```
 */
export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutputPlain {
  const message = decodeMessage(ForwardBackwardOutputSchema, bytes);
  const outputs: Array<Record<string, PlainTensor>> = [];
  message.lossFnOutputs.forEach((record, r) => {
    const count = bigintInRange(record.numDatums, `loss_fn_outputs[${r}].num_datums`, 0, bytes.byteLength);
    const datums: Array<Record<string, PlainTensor>> = Array.from({ length: count }, () => Object.create(null));
    for (const [name, batched] of Object.entries(record.fields)) {
      const field = `loss_fn_outputs[${r}].fields.${name}`;
      const dtype = dtypeName(batched.dtype, `${field}.dtype`);
      const offsets = readInt64AsNumbers(batched.offsets, `${field}.offsets`, 0, batched.data.byteLength);
      if (offsets.length !== count + 1) throw new TinkerWireError('TINKER_WIRE_INVALID', `${offsets.length} offsets for ${count} datums`, `${field}.offsets`);
      const trailing = batched.trailingShape.map((n, i) => bigintInRange(n, `${field}.trailing_shape[${i}]`, 0, batched.data.byteLength));
      const per = trailing.reduce((p, n) => p * n, 1);
      for (let k = 0; k < count; k++) {
        if (offsets[k + 1] < offsets[k]) throw new TinkerWireError('TINKER_WIRE_INVALID', `offsets decrease at datum ${k}`, `${field}.offsets`);
        const data = readValues(batched.data.subarray(offsets[k], offsets[k + 1]), dtype, field);
        const leading = per === 0 ? 0 : Math.floor(data.length / per);
        datums[k][name] = { dtype: dtype === 'bfloat16' ? 'float32' : dtype, shape: [leading, ...trailing], data };
      }
    }
    outputs.push(...datums);
  });
  const metrics: Record<string, number> = Object.create(null);
  for (const [key, value] of Object.entries(message.metrics)) metrics[key] = value;
  return { lossFnOutputType: message.lossFnOutputType.split(':').pop() ?? '', lossFnOutputs: outputs, metrics };
}
