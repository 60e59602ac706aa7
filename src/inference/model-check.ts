import { Injectable } from '@nestjs/common';
import { fork } from 'node:child_process';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';

export interface ModelCheckRequest {
  dir: string;
}

export type ModelCheckReply = { ok: { modelType: string } } | { failure: string };

/** Longest a model folder check may take before its process is killed. */
const CHECK_TIMEOUT_MS = 5 * 60_000;

/**
 * Checks uploaded model folders off the API's event loop: each check runs in its own child process
 * (`model-check.main.ts`) with the heap the dataset reader gets (setting dataset_parse_memory_mb),
 * and reads only the config, tokenizer, chat template and the safetensors headers. A folder the engine
 * cannot load is 400 `OT_ERR_MODEL_INVALID` with the engine's reason.
 */
@Injectable()
export class ModelChecker {
  constructor(private readonly config: AppConfig) {}

  check(dir: string): Promise<{ modelType: string }> {
    const memoryMb = this.config.values.dataset_parse_memory_mb;
    return new Promise((resolve, reject) => {
      const child = fork(this.config.install.modelCheckEntry, [], { execArgv: [`--max-old-space-size=${memoryMb}`], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderr.length < 64 * 1024) stderr += chunk.toString('utf8');
      });
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
        if (child.exitCode === null) child.kill('SIGKILL');
      };
      const timer = setTimeout(
        () => settle(() => reject(new AppError(ErrorCode.MODEL_INVALID, `Model folder refused: checking it took longer than ${CHECK_TIMEOUT_MS / 60_000} minutes`))),
        CHECK_TIMEOUT_MS,
      );
      child.once('message', (reply: ModelCheckReply) =>
        settle(() => ('ok' in reply ? resolve(reply.ok) : reject(new AppError(ErrorCode.MODEL_INVALID, `Model folder refused: ${reply.failure.split(dir).join('<model>')}`)))),
      );
      child.once('error', (error) => settle(() => reject(new AppError(ErrorCode.INTERNAL, `Could not start the model check: ${error.message}`))));
      child.once('exit', (code, signal) =>
        settle(() => {
          if (/heap out of memory|Reached heap limit/.test(stderr) || signal === 'SIGABRT') {
            reject(
              new AppError(ErrorCode.MODEL_INVALID, `Model folder refused: reading its config and tokenizer needs more than ${memoryMb} MiB (setting dataset_parse_memory_mb)`),
            );
          } else reject(new AppError(ErrorCode.INTERNAL, `The model check stopped (${signal ?? `code ${code}`})`));
        }),
      );
      child.send({ dir } satisfies ModelCheckRequest);
    });
  }
}
