/**
 * Entry point of the job runner child process. A worker spawns one per job (with the job's devices in
 * CUDA_VISIBLE_DEVICES), sends it a start message, and reads its IPC messages, stdout and stderr.
 * Exit code 0 means the job succeeded. The process exits if its worker goes away.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseStoredSpec } from './kinds/job-kinds';
import { configureEngine } from './rollout/engine-settings';
import { JobHub, type JobHubAccess } from './hub/job-hub';
import { AppError } from './core/app-error';
import { parseIpcMessage } from './core/ipc-message';
import type { CallInbox, RunContext, RunnerPaths } from './runner/run-context';
import { ToRunner, type CallMessage, type FailureCategory, type RunnerMessage, type StartMessage } from './runner/runner-protocol';

const controller = new AbortController();

/** Calls arrive on the IPC channel at any time ({@link deliver}); a session runner takes them with `next()`. */
const queued: CallMessage[] = [];
let waiting: ((call: CallMessage | null) => void) | null = null;

function deliver(call: CallMessage): void {
  if (waiting) {
    const wake = waiting;
    waiting = null;
    wake(call);
  } else queued.push(call);
}

function callInbox(): CallInbox {
  controller.signal.addEventListener('abort', () => waiting?.(null));
  return {
    next: (timeoutMs) => {
      const first = queued.shift();
      if (first || controller.signal.aborted) return Promise.resolve(first ?? null);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting = null;
          resolve(null);
        }, timeoutMs);
        waiting = (call) => {
          clearTimeout(timer);
          resolve(call);
        };
      });
    },
    reply: (id, outcome) => send({ type: 'call-result', id, ...outcome }),
  };
}

function send(message: RunnerMessage): void {
  process.send?.(message);
}

const onDisconnect = (): never => process.exit(70);

let finishing = false;

/**
 * Sends the last message, then lets go of the channel so the process can exit with `code` (at once with
 * `now`, whatever is still running). Only the first call counts.
 */
function finish(code: number, last?: RunnerMessage, now = false): void {
  if (finishing) return;
  finishing = true;
  process.exitCode = code;
  process.off('disconnect', onDisconnect);
  const release = () => {
    process.disconnect?.();
    if (now) process.exit(code);
  };
  if (last) process.send?.(last, undefined, {}, release);
  else process.send?.({ type: 'done' } satisfies RunnerMessage, undefined, {}, release);
}

function stopOn(signal: NodeJS.Signals): void {
  process.on(signal, () => {
    if (controller.signal.aborted) process.exit(128 + 15);
    console.log(`[runner] received ${signal}, stopping`);
    controller.abort(signal === 'SIGTERM' ? 'cancelled' : signal);
  });
}

async function run(start: StartMessage): Promise<void> {
  // The kind's schema, not a cast, says what the runner reads.
  const { kind, spec } = parseStoredSpec(start.job.kind, withSecrets(start.job.spec, start.secrets ?? {}));
  const runner = await kind.runner();
  mkdirSync(start.workDir, { recursive: true });
  configureEngine(start.engine);
  const ctx: RunContext<typeof spec> = {
    jobId: start.job.id,
    spec,
    attempt: start.job.attempt,
    resumeState: start.job.resumeState ?? null,
    workDir: start.workDir,
    paths: runnerPaths(start),
    policy: start.policy,
    signal: controller.signal,
    log: (line) => console.log(line),
    progress: (step, total = null, message = null) => send({ type: 'progress', step, total, message }),
    metrics: (step, values) => send({ type: 'metrics', step, values }),
    checkpoint: (state) => send({ type: 'checkpoint', state }),
    resumed: (step, keepPrefixes = []) => send({ type: 'resumed', step, keepPrefixes }),
    artifact: (name, path) => send({ type: 'artifact', name, path }),
    calls: callInbox(),
  };
  send({ type: 'running' });
  await runner(ctx);
}

/** The stored spec with its secrets put back at their dotted paths. */
function withSecrets(spec: Record<string, unknown>, secrets: Record<string, string>): Record<string, unknown> {
  const out = structuredClone(spec);
  for (const [path, value] of Object.entries(secrets)) {
    const keys = path.split('.');
    let holder = out;
    for (const key of keys.slice(0, -1)) holder = (holder[key] ??= {}) as Record<string, unknown>;
    holder[keys[keys.length - 1]] = value;
  }
  return out;
}

function runnerPaths(start: StartMessage): RunnerPaths {
  const home = start.paths.home;
  return {
    hostRoot: start.paths.hostRoot,
    pluginsDir: start.paths.pluginsDir,
    home,
    jobsDir: join(home, 'jobs'),
    datasetsDir: join(home, 'datasets'),
    // The job's own folder holds what it saves and resumes from.
    modelRoots: [...start.policy.modelRoots, join(home, 'jobs', start.job.id)],
    ...(start.policy.hub ? { hub: new JobHub(start.policy.hub, start.policy.hubAccess ?? noHubRecords(), (use) => send({ type: 'hub', use })) } : {}),
  };
}

/** A worker that sent no records: the owner may use only what the Hub lets them fetch, with no quota. */
function noHubRecords(): JobHubAccess {
  return { userId: '', admin: false, granted: [], budgetBytes: null, quotaBytes: 0 };
}

function main(): void {
  if (!process.send) {
    console.error('The job runner is started by a worker, not by hand.');
    process.exit(2);
  }
  stopOn('SIGTERM');
  stopOn('SIGINT');
  // The worker died or dropped us: nobody would record what we do, so stop.
  process.on('disconnect', onDisconnect);
  let started = false;
  process.on('message', (raw: unknown) => {
    let message: ToRunner;
    try {
      message = parseIpcMessage(ToRunner, raw, 'The worker');
    } catch (error) {
      // The worker is this server's own code: a message that does not fit is a bug, and the job stops on it.
      console.error(`error: ${(error as Error).message}`);
      finish(1, { type: 'failed', message: (error as Error).message }, true);
      return;
    }
    switch (message.type) {
      case 'start':
        if (started) return;
        started = true;
        return start(message);
      case 'call':
        return deliver(message);
    }
  });
}

function start(message: StartMessage): void {
  run(message).then(
    () => finish(0),
    (error: unknown) => {
      // The job's log and error are its owner's to read: the message, never a stack trace (which
      // names the installation's files). Setting runner_stacks prints it for an operator.
      const text = error instanceof Error ? error.message : String(error);
      console.error(message.stackTraces && error instanceof Error && error.stack ? error.stack : `error: ${text}`);
      finish(1, { type: 'failed', message: text, category: failureCategory(error) });
    },
  );
}

/**
 * A typed refusal of the job's inputs (an {@link AppError} with a 4xx status: a model the Hub or the
 * model roots refuse, a download over the limit) is the user's; 408, 409 and 429 are the moment's, and
 * anything else is a crash, the server's.
 */
function failureCategory(error: unknown): FailureCategory {
  if (!(error instanceof AppError)) return 'server';
  const { status } = error;
  return status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429 ? 'user' : 'server';
}

main();
