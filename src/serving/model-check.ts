import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { askOnce } from '../core/one-shot-child';
import { ModelCheckReply, type ModelCheckRequest } from './model-check-protocol';

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

  async check(dir: string): Promise<{ modelType: string }> {
    const memoryMb = this.config.values.dataset_parse_memory_mb;
    const request: ModelCheckRequest = { dir };
    const outcome = await askOnce(this.config.install.modelCheckEntry, request, ModelCheckReply, 'The model check', { memoryMb, timeoutMs: CHECK_TIMEOUT_MS });
    const refused = (why: string) => new AppError(ErrorCode.MODEL_INVALID, `Model folder refused: ${why}`);
    if ('timedOut' in outcome) throw refused(`checking it took longer than ${CHECK_TIMEOUT_MS / 60_000} minutes`);
    if ('outOfMemory' in outcome) throw refused(`reading its config and tokenizer needs more than ${memoryMb} MiB (setting dataset_parse_memory_mb)`);
    if ('startFailed' in outcome) throw new AppError(ErrorCode.INTERNAL, `Could not start the model check: ${outcome.startFailed}`);
    if ('stopped' in outcome) throw new AppError(ErrorCode.INTERNAL, `The model check stopped (${outcome.stopped})`);
    if ('badReply' in outcome) throw new AppError(ErrorCode.INTERNAL, outcome.badReply);
    // The engine's reasons name the folder: the tenant sees <model>, never the server's path.
    if ('failure' in outcome.reply) throw refused(outcome.reply.failure.split(dir).join('<model>'));
    return outcome.reply.ok;
  }
}
