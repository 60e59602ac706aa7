/**
 * A child process that reads one dataset file for the API (see `DatasetReader`): the upload check of
 * every row, a preview, or a compatibility sample. Parsing runs here so a hostile file can never block
 * the API's event loop; the process's heap is capped (`--max-old-space-size`), and running out of it
 * ends this process only (a worker thread's heap limit can still abort the whole API process in V8).
 * One request per process: it answers one IPC message, then exits.
 */
import { checkDatasetRow } from '@opentinker/env-sdk';
import type { Environment } from '@opentinker/env-sdk';
import { loadRegistry } from '../registry/registry-loader';
import { checkDatasetFile, firstUsableRow } from './dataset-check';
import { DatasetCapError, DatasetFormatError, readDatasetRows } from './dataset-rows';
import { parseIpcMessage } from '../core/ipc-message';
import { DatasetReaderRequest, type DatasetReaderReply } from './dataset-reader-protocol';

async function environment(req: { environment: { id: string; hostRoot: string; pluginsDir: string } }): Promise<Environment<unknown, unknown>> {
  const records = await loadRegistry({ hostRoot: req.environment.hostRoot, pluginsDir: req.environment.pluginsDir });
  const record = records.find((r) => r.id === req.environment.id && r.status === 'loaded' && r.environment);
  if (!record?.environment) throw new Error(`environment ${req.environment.id} is not loaded`);
  return record.environment;
}

async function handle(req: DatasetReaderRequest): Promise<DatasetReaderReply> {
  switch (req.op) {
    case 'check': {
      const env = await environment(req);
      return { report: await checkDatasetFile(req.path, req.format, (row) => checkDatasetRow(env, row), req.caps) };
    }
    case 'preview': {
      const rows = [];
      for await (const row of readDatasetRows(req.path, req.format, req.caps)) {
        rows.push(row);
        if (rows.length >= req.limit) break;
      }
      return { rows };
    }
    case 'sample': {
      const env = await environment(req);
      return { reason: await firstUsableRow(req.path, req.format, (row) => checkDatasetRow(env, row), req.limit, req.caps) };
    }
  }
}

const reply = (message: DatasetReaderReply) => process.send!(message, undefined, {}, () => process.disconnect());

process.once('message', (raw: unknown) => {
  void Promise.resolve()
    .then(() => handle(parseIpcMessage(DatasetReaderRequest, raw, 'The API')))
    .then(reply, (error: unknown) => {
      const e = error as Error;
      const failure =
        error instanceof DatasetCapError
          ? { kind: 'cap' as const, message: e.message, setting: error.setting }
          : error instanceof DatasetFormatError
            ? { kind: 'format' as const, message: e.message }
            : { kind: 'internal' as const, message: e?.message ?? String(error) };
      reply({ failure });
    });
});
