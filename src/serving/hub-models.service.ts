import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { CachedHubModels, hubModelId } from '../hub/cached-hub-models';

/** A Hub model a chat request resolved to. */
export interface HubModel {
  /** `hf:Org/Name@<commit>`: what answers name, whichever revision the request named. */
  id: string;
  /** The snapshot folder a model server loads. */
  dir: string;
}

/**
 * The Hugging Face models chat completions serve: only those in the API machine's Hub cache
 * (`hub_cache_dir`), put there by `opentinker models pull` on that machine or by a job that ran on its
 * embedded worker. A chat request never downloads: any tenant could otherwise make the server fetch
 * `hub_max_download_bytes` (32 GiB by default) for every repo they name, and wait minutes inside a
 * request; which base models the server holds is its operator's call. Any user may chat with a cached
 * model: the cache holds base models, not anyone's checkpoints.
 */
@Injectable()
export class HubModelsService extends CachedHubModels {
  constructor(config: AppConfig) {
    super(config.values);
  }

  /** The cached snapshot `hf:Org/Name[@revision]` names; 400 for a malformed name, 404 saying how to fill the cache. */
  async resolve(model: string): Promise<HubModel> {
    const { ref, name, snapshot } = await this.find(model, 'model');
    if (ref.type !== 'model') {
      throw new AppError(ErrorCode.VALIDATION, `model ${JSON.stringify(model)} names a dataset repo; chat takes a model repo (hf:Org/Name or hf:Org/Name@revision)`, {
        field: 'model',
      });
    }
    if (!snapshot) {
      const pull = `${ref.repo}${ref.revision === null ? '' : `@${ref.revision}`}`;
      throw new AppError(
        ErrorCode.MODEL_NOT_FOUND,
        `Model ${JSON.stringify(model)} not found: ${name} is not in this server's Hub cache, and chat never downloads. ` +
          `Fill the cache on the API server's machine: \`opentinker models pull ${pull}\` (or a job with model.path ${name} on its embedded worker); GET /v1/models lists what is cached`,
        { field: 'model' },
      );
    }
    return { id: hubModelId(ref.repo, snapshot.commit), dir: snapshot.dir };
  }
}
