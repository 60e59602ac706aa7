/**
 * A child process that checks an uploaded model folder for the API (see `ModelChecker`): config.json
 * names an architecture the engine runs, the tokenizer loads, the safetensors headers hold the weights
 * the config needs. Reading a hostile folder (a huge tokenizer.json, a header that claims gigabytes)
 * happens here, with a capped heap, never in the API's event loop. One request per process.
 */
import { inspectHfModelDir } from '@opentinker/engine';
import { parseIpcMessage } from '../core/ipc-message';
import { ModelCheckRequest, type ModelCheckReply } from './model-check-protocol';

process.once('message', (raw: unknown) => {
  void Promise.resolve()
    .then(() => inspectHfModelDir(parseIpcMessage(ModelCheckRequest, raw, 'The API').dir))
    .then((info): ModelCheckReply => ({ ok: { modelType: info.config.model_type } }))
    .catch((error: unknown): ModelCheckReply => ({ failure: (error as Error)?.message ?? String(error) }))
    .then((reply) => process.send?.(reply, () => process.exit(0)));
});
