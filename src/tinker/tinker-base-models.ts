import { Injectable } from '@nestjs/common';
import { modelPreset, MODEL_PRESETS } from '@opentinker/engine/models';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SupportedModel } from '@opentinker/tinker-wire';
import type { Principal } from '../auth/principal';
import { AppConfig } from '../config/app-config';
import { AppError, ErrorCode } from '../core/app-error';
import { CachedHubModels } from '../hub/cached-hub-models';
import { HubAccessService } from '../hub/hub-access.service';
import { HUB_PREFIX, isHubRef, parseHubRef } from '../hub/hub-ref';
import { isUserModelRef, parseUserModelRef, userModelDir, userModelName } from '../models/user-model-files';
import { UserModelsRepository } from '../models/user-models.repository';
import { modelPathAllowed } from '../rollout/model-roots';

/** A base model as a job names it (`model.preset` or `model.path`). */
export type BaseModelSpec = { preset: string } | { path: string };

/** What a client's base model name resolves to. */
export interface ResolvedBase {
  spec: BaseModelSpec;
  /** One string per base, whatever the client called it (`Qwen/X` and `hf:Qwen/X` share a runner). */
  key: string;
  /** What the SDK's `get_tokenizer()` loads: the Hub id, or a folder (for a client on this machine); null for presets. */
  tokenizerId: string | null;
  /** The config's `model_type`, when known here. */
  arch: string | null;
}

/** `Org/Name` or `Org/Name@revision`: a Hugging Face repo as the SDK names base models. */
const BARE_HUB_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]+)?$/;

/**
 * Base models by the names Tinker clients use: a preset (`tiny-char`), a Hugging Face repo (`hf:Org/Name`
 * or, as the SDK's users write it, `Org/Name`), an uploaded model (`model:<id>`), a checkpoint of one of
 * your jobs (`job:<id>`), or a folder under `model_roots`, as a job's `model.path` names them; and the
 * list `get_server_capabilities` answers.
 */
@Injectable()
export class TinkerBaseModels {
  private readonly hub: CachedHubModels;

  constructor(
    private readonly config: AppConfig,
    private readonly uploads: UserModelsRepository,
    private readonly hubAccess: HubAccessService,
  ) {
    this.hub = new CachedHubModels(config.values);
  }

  /** The job model spec a name means; 400 naming `field` for a name that means nothing here. Ownership of `job:`/`model:` names is checked when the runner's job is submitted. */
  resolve(name: string, field = 'base_model'): ResolvedBase {
    const home = this.config.home;
    if (Object.prototype.hasOwnProperty.call(MODEL_PRESETS, name)) {
      return { spec: { preset: name }, key: JSON.stringify({ preset: name }), tokenizerId: null, arch: modelPreset(name).model_type };
    }
    let path: string;
    let tokenizerId: string | null = null;
    if (isHubRef(name) || BARE_HUB_NAME.test(name)) {
      path = isHubRef(name) ? name : `${HUB_PREFIX}${name}`;
      const ref = parseHubRef(path, { field });
      if (ref.type !== 'model') throw invalid(field, `${name} names a dataset repo, not a model`);
      tokenizerId = ref.repo;
    } else if (isUserModelRef(name)) {
      const id = parseUserModelRef(name);
      if (id === null) throw invalid(field, `${JSON.stringify(name)} is not model:<id> of an uploaded model`);
      path = userModelName(id);
      tokenizerId = userModelDir(home, id);
    } else if (name.startsWith('job:')) {
      path = name;
    } else if (name.startsWith('/')) {
      path = name;
      tokenizerId = name;
    } else {
      throw new AppError(
        ErrorCode.MODEL_NOT_FOUND,
        `base_model ${JSON.stringify(name)} is not a model this server knows: give a preset (${Object.keys(MODEL_PRESETS).join(', ')}), a Hugging Face repo (Org/Name or hf:Org/Name), model:<id> of an upload, job:<id> of one of your jobs, or a folder under model_roots; GET /api/v1/get_server_capabilities lists them`,
        { field },
      );
    }
    return { spec: { path }, key: JSON.stringify({ path }), tokenizerId, arch: null };
  }

  /** What `get_server_capabilities` lists: presets, the Hub cache's models the caller may use, the model folders under `model_roots`, and the caller's uploads. */
  async supported(caller: Principal): Promise<SupportedModel[]> {
    const out: SupportedModel[] = Object.keys(MODEL_PRESETS).map((name) => ({
      model_name: name,
      max_context_length: modelPreset(name).max_position_embeddings,
      trainable: true,
      sampleable: true,
    }));
    // The Hub cache's models this caller may use: another tenant's private pull is not listed.
    const visible = await this.hubAccess.filterVisible(caller, await this.hub.list().catch(() => []));
    const repos = new Set(visible.map((m) => m.repo));
    for (const repo of [...repos].sort()) out.push({ model_name: repo, trainable: true, sampleable: true });
    for (const dir of await this.rootFolders()) out.push({ model_name: dir, max_context_length: await contextOf(dir), trainable: true, sampleable: true });
    for (const upload of await this.uploads.ofOwner(caller.userId, 200)) out.push({ model_name: userModelName(upload.id), trainable: true, sampleable: true });
    return out;
  }

  /** Model folders (with a config.json) at the top of each `model_roots` folder, and the roots themselves when they are one. */
  private async rootFolders(): Promise<string[]> {
    const roots = this.config.values.model_roots;
    const found: string[] = [];
    for (const root of roots) {
      if (existsSync(join(root, 'config.json'))) found.push(root);
      const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const dir = join(root, e.name);
        if (e.isDirectory() && modelPathAllowed(dir, roots) && existsSync(join(dir, 'config.json'))) found.push(dir);
      }
    }
    return found.sort();
  }
}

async function contextOf(dir: string): Promise<number | undefined> {
  try {
    const n = (JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as { max_position_embeddings?: unknown }).max_position_embeddings;
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.VALIDATION, message, { field });
}
