import { z } from 'zod';
import { DATASET_FORMATS } from '../rollout/dataset-files';
import { DatasetReportDto } from './datasets.dto';
import { DatasetCaps, DatasetRow } from './dataset-rows';

/**
 * Messages between the API and a dataset reader process (`dataset-reader.main.ts`): one request, one
 * reply, each parsed on receipt with these schemas.
 */

const EnvRef = z.object({ id: z.string(), hostRoot: z.string(), pluginsDir: z.string() });
export type EnvRef = z.output<typeof EnvRef>;

const file = { path: z.string(), format: z.enum(DATASET_FORMATS), caps: DatasetCaps };

export const DatasetReaderRequest = z.discriminatedUnion('op', [
  z.object({ op: z.literal('check'), ...file, environment: EnvRef }),
  z.object({ op: z.literal('preview'), ...file, limit: z.number().int() }),
  z.object({ op: z.literal('sample'), ...file, limit: z.number().int(), environment: EnvRef }),
]);
export type DatasetReaderRequest = z.output<typeof DatasetReaderRequest>;

export const DatasetReaderReply = z.union([
  z.object({ report: DatasetReportDto }),
  z.object({ rows: z.array(DatasetRow) }),
  z.object({ reason: z.string().nullable() }),
  z.object({
    failure: z.discriminatedUnion('kind', [
      z.object({ kind: z.literal('cap'), message: z.string(), setting: z.string() }),
      z.object({ kind: z.literal('format'), message: z.string() }),
      z.object({ kind: z.literal('internal'), message: z.string() }),
    ]),
  }),
]);
export type DatasetReaderReply = z.output<typeof DatasetReaderReply>;
