import { isEngineError } from '@opentinker/engine';
import { join } from 'node:path';
import { configureEngine } from '../rollout/engine-settings';
import { loadPolicy, type Policy } from '../rollout/policy';
import { generateChat, GenerationError, type DeltaSink } from '../rollout/generation';
import { parseIpcMessage } from '../core/ipc-message';
import { isCompletionRequest, ToModelServer, type FromModelServer } from './model-protocol';
import { generateCompletion } from '../rollout/text-completion';

/**
 * A model server: a child process of the API that holds one checkpoint and answers chat requests over
 * IPC, so sampling (synchronous TensorFlow.js work) never blocks the API's event loop. It exits when
 * its parent goes away. Messages: {@link ToModelServer} in (parsed on receipt), {@link FromModelServer} out.
 */

let policy: Policy | null = null;

function send(message: FromModelServer): void {
  process.send?.(message);
}

async function handle(message: ToModelServer): Promise<void> {
  if (message.type === 'load') {
    try {
      // The API resolved the name to a folder: one of the caller's checkpoints, or a snapshot of its Hub cache.
      if (message.engine) configureEngine(message.engine);
      const paths = {
        hostRoot: process.cwd(),
        pluginsDir: '',
        home: message.home,
        jobsDir: message.jobsDir,
        datasetsDir: join(message.home, 'datasets'),
        modelRoots: message.modelRoots,
      };
      policy = await loadPolicy({ path: message.dir, chat_template: 'auto', seed: 0 }, { paths, log: (line) => process.stderr.write(`${line}\n`) }, { trainable: false });
      send({ type: 'ready', contextLength: policy.contextLength, source: policy.source });
    } catch (error) {
      send({ type: 'load_failed', message: (error as Error).message });
    }
    return;
  }
  const { id, request } = message;
  if (!policy) {
    send({ type: 'error', id, kind: 'internal', message: 'no model loaded' });
    return;
  }
  try {
    const onDelta: DeltaSink = (index, text, logprobs) => send({ type: 'delta', id, index, text, logprobs });
    const result = isCompletionRequest(request) ? generateCompletion(policy, request, onDelta) : generateChat(policy, request, onDelta);
    send({ type: 'result', id, result });
  } catch (error) {
    const e = error as Error;
    if (e instanceof GenerationError) send({ type: 'error', id, kind: e.kind, message: e.message, field: e.field });
    else send({ type: 'error', id, kind: isEngineError(e) ? 'invalid' : 'internal', message: e.message });
  }
}

let chain: Promise<void> = Promise.resolve();
process.on('message', (raw: unknown) => {
  let message: ToModelServer;
  try {
    message = parseIpcMessage(ToModelServer, raw, 'The API');
  } catch (error) {
    // The API's own bug: the request it names fails, nothing else.
    const id = (raw as { id?: unknown } | null)?.id;
    if (typeof id === 'number') send({ type: 'error', id, kind: 'internal', message: (error as Error).message });
    else process.stderr.write(`${(error as Error).message}\n`);
    return;
  }
  chain = chain.then(() => handle(message));
});
// The parent closed the channel (shut down or crashed): nothing will ask for more.
process.on('disconnect', () => process.exit(0));
