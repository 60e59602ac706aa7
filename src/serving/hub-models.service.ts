import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { CachedHubModels, hubModelId, type CachedHubModel } from '../hub/cached-hub-models';
import { HubAccessService, type HubCaller } from '../hub/hub-access.service';

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
 * request; which base models the server holds is its operator's call. A user sees and loads only the
 * snapshots {@link HubAccessService} lets them use: what the operator pulled or lists, public ones, and
 * what their own token fetched; another tenant's private pull answers as if it were not cached.
 */
@Injectable()
export class HubModelsService extends CachedHubModels {
  constructor(
    config: AppConfig,
    private readonly access: HubAccessService,
  ) {
    super(config.values);
  }

  /** The cached model snapshots the caller may use, by repo then commit. */
  async visibleTo(caller: HubCaller): Promise<CachedHubModel[]> {
    return this.access.filterVisible(caller, await this.list());
  }

  /** The cached snapshot `hf:Org/Name[@revision]` names, if the caller may use it; 400 for a malformed name, 404 saying how to fill the cache. */
  async resolve(caller: HubCaller, model: string): Promise<HubModel> {
    const found = await this.find(model, 'model');
    const { ref, name } = found;
    const snapshot = found.snapshot && (await this.access.mayUse(caller, { ...ref, commit: found.snapshot.commit, operatorShared: found.operatorShared })) ? found.snapshot : null;
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
