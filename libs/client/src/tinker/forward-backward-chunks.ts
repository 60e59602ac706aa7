import type { DatumInput } from '@opentinker/tinker-wire';
import type { ChunkLimits } from './tinker-context';
import type { ForwardBackwardOutput } from './tinker-types';

/** The SDK's estimate of a token's bytes on the protobuf wire. */
const BYTES_PER_TOKEN = 4;

/**
 * A batch cut into requests as the SDK cuts it: a new chunk when the next datum would pass the byte
 * estimate (tokens × 4 plus the loss inputs' values) or the chunk holds `maxDatums`.
 */
export function chunkDatums(data: DatumInput[], limits: ChunkLimits): DatumInput[][] {
  const chunks: DatumInput[][] = [];
  let current: DatumInput[] = [];
  let bytes = 0;
  for (const datum of data) {
    const size = estimateBytes(datum);
    if ((current.length > 0 && bytes + size > limits.maxBytes) || current.length === limits.maxDatums) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(datum);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function estimateBytes(datum: DatumInput): number {
  let bytes = 0;
  for (const chunk of datum.modelInput as Array<{ tokens: ArrayLike<number> }>) bytes += chunk.tokens.length * BYTES_PER_TOKEN;
  for (const tensor of Object.values(datum.lossFnInputs)) bytes += tensor.data.length * (tensor.dtype === 'int64' ? 8 : 4);
  return bytes;
}

/**
 * The results of a batch's chunks as one, as the SDK merges them: outputs in order; each metric by the
 * reduction its key names (`loss:sum` summed, `x:mean` weighted by each chunk's datums, `min`, `max`,
 * `slack` = max − weighted mean, `hash2` summed mod 2^64, `unique` kept per chunk as `key`, `key_1`, …).
 * A metric not in every chunk, or with an unknown reduction, is left out.
 */
export function combineForwardBackwardOutputs(results: ForwardBackwardOutput[]): ForwardBackwardOutput {
  if (results.length === 1) return results[0];
  if (results.length === 0) return { lossFnOutputType: '', lossFnOutputs: [], metrics: {} };
  const weights = results.map((r) => r.lossFnOutputs.length);
  const metrics: Record<string, number> = {};
  for (const key of Object.keys(results[0].metrics)) {
    if (!results.every((r) => key in r.metrics)) continue;
    const values = results.map((r) => r.metrics[key]);
    const reduction = key.split(':')[1];
    const mean = () => weightedMean(values, weights);
    switch (reduction) {
      case 'sum':
        metrics[key] = values.reduce((a, b) => a + b, 0);
        break;
      case 'mean':
        metrics[key] = mean();
        break;
      case 'min':
        metrics[key] = Math.min(...values);
        break;
      case 'max':
        metrics[key] = Math.max(...values);
        break;
      case 'slack':
        metrics[key] = Math.max(...values) - mean();
        break;
      case 'hash2':
        metrics[key] = Number(values.reduce((a, v) => (a + (BigInt(Math.trunc(v)) & 0xffff_ffff_ffff_ffffn)) & 0xffff_ffff_ffff_ffffn, 0n));
        break;
      case 'unique':
        metrics[key] = values[0];
        values.slice(1).forEach((v, i) => (metrics[`${key}_${i + 1}`] = v));
        break;
    }
  }
  return { lossFnOutputType: results[0].lossFnOutputType, lossFnOutputs: results.flatMap((r) => r.lossFnOutputs), metrics };
}

function weightedMean(values: number[], weights: number[]): number {
  const total = weights.reduce((a, b) => a + b, 0);
  if (total === 0) return values.reduce((a, b) => a + b, 0) / values.length;
  return values.reduce((a, v, i) => a + v * weights[i], 0) / total;
}
