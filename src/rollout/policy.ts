import {
  ByteTokenizer,
  CHATML_TEMPLATE,
  ChatTemplate,
  fullFineTuningRefusal,
  initBackend,
  inspectHfModelDir,
  loadHfModelDir,
  loadLoraAdapter,
  mapHfModelWeights,
  Model,
  modelPreset,
  MODEL_PRESETS,
  wasmHeapUsage,
} from '@opentinker/engine';
import type { BackendInfo, ModelConfig, Tokenizer } from '@opentinker/engine';
import { engineNotice } from '@opentinker/engine/native';
import type { Message } from '@opentinker/env-sdk';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError, ErrorCode } from '../core/app-error';
import { TINKER_META_FILE, type TinkerCheckpointMeta } from './tinker-checkpoint-files';
import type { ModelSpec } from './rl-spec';
import { engineOptions } from './engine-settings';
import { isHubRef, parseHubRef } from '../hub/hub-ref';
import { openableModelDir } from './model-roots';
import { isUserModelRef, parseUserModelRef, userModelDir } from '../models/user-model-files';
import type { RunnerPaths } from '../runner/run-context';
import { checkpointSteps, jobCheckpointsDir } from './checkpoint-folders';

/**
 * The `plain` chat template: the BOS token (when the tokenizer has one), then the message contents
 * joined with nothing between them. Tiny models trained on raw text (`1+2=3`) use it. Written as Jinja
 * so a checkpoint saved with it renders the same when loaded back with `chat_template: auto`.
 */
export const PLAIN_TEMPLATE = `{{- bos_token if bos_token is defined else '' -}}
{%- for message in messages %}{{- message.content }}{%- endfor %}`;

/** Which chat template a policy renders with, for saving it beside the weights. */
export interface PolicyChatTemplate {
  /** `chatml` (the built-in ChatML), `plain`, or `folder` (the model folder's own). */
  name: 'chatml' | 'plain' | 'folder';
  /** The Jinja source (what a saved folder's `tokenizer_config.json` gets as `chat_template`). */
  source: string;
}

/** A language model ready to roll out: weights, tokenizer and how conversations become tokens. */
export interface Policy {
  model: Model;
  tokenizer: Tokenizer;
  config: ModelConfig;
  /** The first messages of a conversation plus the opening of the assistant's turn. */
  renderPrompt(messages: readonly Message[]): number[];
  /**
   * The tokens that follow a model turn when environment messages are added and the next assistant
   * turn opens: exactly what a render of the whole conversation has at that place. `lastTokenId` is the
   * turn's last sampled token: when it is the stop token that also closes an assistant message in the
   * template (ChatML's `<|im_end|>`), it is not repeated; when the turn was cut (length, stop string),
   * the template's end of message is added. Default: the turn ended with the first stop token.
   */
  renderObservation(messages: readonly Message[], lastTokenId?: number): number[];
  /** Token ids that end a model turn. */
  stopTokenIds: number[];
  /** Most tokens (prompt + response) the model can attend to. */
  contextLength: number;
  /** What was loaded, for logs: `preset tiny-char (seed 0)`, a folder, or `job:<id>/step-<n> (<folder>)`. */
  source: string;
  /** The model folder the weights came from, or null for a preset. */
  dir: string | null;
  chatTemplate: PolicyChatTemplate;
  /** Extra config.json fields of the folder the weights came from (kept when saving), or undefined. */
  rawConfig?: Record<string, unknown>;
  dispose(): void;
}

let backend: Promise<BackendInfo> | null = null;
/**
 * Starts the engine's TensorFlow.js backend once per process (wasm on these machines) with the settings
 * given to `configureEngine`; every runner calls this before it builds a model.
 */
export function ensureEngineBackend(): Promise<BackendInfo> {
  backend ??= initBackend(engineOptions()).then((info) => {
    // One line in the job's log: which backend and kernels run, and why a faster one did not.
    console.log(engineSummary(info));
    return info;
  });
  return backend;
}

/** Full fine-tuning holds weights, gradients and moments in the engine's heap: refused before loading when they cannot fit. */
function assertFullFineTuningFits(config: ModelConfig): void {
  const refusal = fullFineTuningRefusal(config, wasmHeapUsage().budgetBytes || undefined);
  if (refusal) throw new Error(`model: ${refusal}`);
}

/** The engine's start line: backend, kernels, threads, and what is missing for speed. */
export function engineSummary(info: BackendInfo): string {
  const parts = [`engine: ${info.name}`];
  if (info.matmul) parts.push(`matmul ${info.matmul}`);
  if (info.native.ok) parts.push(`native addon ${info.native.kernel}, ${info.native.threads} thread(s)`);
  if (info.cuda?.ok) parts.push(`weight products on ${info.cuda.name} (cuBLAS)`);
  else if (info.cuda && process.env.CUDA_VISIBLE_DEVICES) parts.push(`GPU not used: ${info.cuda.error}`);
  const line = parts.join(', ');
  const notice = info.name === 'tensorflow' ? undefined : engineNotice();
  return notice ? `${line}\n${notice}` : line;
}

/** Where a policy's weights are, for its log line. */
function weightsSummary(model: Model): string {
  const { heap, native } = model.weightBytes();
  const mb = (b: number) => `${(b / 1024 ** 2).toFixed(0)} MB`;
  return native > 0
    ? `weights ${mb(native)} outside the heap (${model.trainable ? 'trainable' : 'frozen'}), ${mb(heap)} in it`
    : `weights ${mb(heap)} in the heap (${model.trainable ? 'trainable' : 'frozen'})`;
}

/** Text that no chat template produces on its own: marks where an assistant message's content sits. */
const CONTENT_MARK = '\u0001ot-content-mark\u0001';

/** Job ids are uuids; nothing else may reach a path (`job:../../etc`). */
const JOB_REF = /^job:([0-9a-fA-F-]{1,64})(?:\/step-(\d{1,9}))?$/;

/** What `model.path` of `job:<id>[/step-<n>]` names. */
export interface JobModelRef {
  jobId: string;
  step: number | null;
}

/** Parses `job:<id>` or `job:<id>/step-<n>`; null for any other string (a folder path). Throws for a malformed `job:` path. */
export function parseJobModelRef(path: string): JobModelRef | null {
  if (!path.startsWith('job:')) return null;
  const m = JOB_REF.exec(path);
  if (!m) throw new Error(`model.path ${JSON.stringify(path)}: expected job:<job id> or job:<job id>/step-<n>`);
  return { jobId: m[1], step: m[2] === undefined ? null : Number(m[2]) };
}

/**
 * The model folder of a train job's checkpoint: `<jobsDir>/<id>/work/checkpoints/step-<n>/model`, the
 * latest complete one (highest n; `step-<n>.tmp` folders are being written) when no step is given.
 */
export async function resolveJobModelDir(ref: JobModelRef, jobsDir: string): Promise<string> {
  const checkpoints = jobCheckpointsDir(jobsDir, ref.jobId);
  const label = `job:${ref.jobId}${ref.step === null ? '' : `/step-${ref.step}`}`;
  const steps = await checkpointSteps(checkpoints);
  if (steps.length === 0)
    throw new AppError(ErrorCode.CHECKPOINT_NOT_FOUND, `model.path ${label}: job ${ref.jobId} has no checkpoints (has it saved one yet?)`, { field: 'model.path' });
  if (ref.step !== null && !steps.includes(ref.step)) {
    throw new AppError(ErrorCode.CHECKPOINT_NOT_FOUND, `model.path ${label}: no checkpoint step-${ref.step} (available: ${steps.map((s) => `step-${s}`).join(', ')})`, {
      field: 'model.path',
    });
  }
  const step = ref.step ?? steps[steps.length - 1];
  return join(checkpoints, `step-${step}`, 'model');
}

/**
 * The model folder a `model.path` names: a train job's checkpoint (`job:<id>[/step-<n>]`), a model
 * folder its owner uploaded (`model:<id>`, `<home>/models/<id>`; the API checked the owner at
 * submission), a Hub repo (`hf:Org/Name[@rev]`, fetched into this machine's cache when missing, on the
 * owner's behalf with their `model.hf_token`: see JobHub), or a folder under the roots.
 */
async function modelDirOf(path: string, hfToken: string | null, ctx: { paths: RunnerPaths; log(line: string): void }): Promise<string> {
  const ref = parseJobModelRef(path);
  if (ref) return resolveJobModelDir(ref, ctx.paths.jobsDir);
  if (isUserModelRef(path)) {
    const id = parseUserModelRef(path);
    const dir = id === null ? null : userModelDir(ctx.paths.home, id);
    if (dir === null || !existsSync(join(dir, 'config.json'))) {
      throw new AppError(ErrorCode.MODEL_NOT_FOUND, `model.path ${JSON.stringify(path)}: no such uploaded model on this server (deleted?)`, { field: 'model.path' });
    }
    return dir;
  }
  if (isHubRef(path)) {
    if (!ctx.paths.hub) throw new Error(`model.path ${JSON.stringify(path)}: this process has no Hub settings`);
    return (await ctx.paths.hub.resolve(parseHubRef(path), { token: hfToken, log: ctx.log })).dir;
  }
  return openableModelDir(path, ctx.paths.modelRoots);
}

/**
 * Loads the policy a spec names: a preset with fresh weights (byte tokenizer), a Hugging Face model
 * folder or Hub repo (`hf:Org/Name[@rev]`), or a checkpoint of a train job (`job:<id>[/step-<n>]`). Errors say what was wrong with
 * `model.preset` / `model.path`. A frozen policy (`trainable: false`: sampling, serving, the base under
 * LoRA) keeps its weights outside the engine's heap, memory-mapped from the folder's safetensors in
 * their stored dtype where the engine's addon runs.
 */
export async function loadPolicy(spec: ModelSpec, ctx: { paths: RunnerPaths; log(line: string): void }, options: { trainable?: boolean } = {}): Promise<Policy> {
  const trainable = options.trainable ?? true;
  await ensureEngineBackend();
  if (spec.preset !== undefined) return presetPolicy(spec.preset, spec.seed, spec.chat_template, ctx, trainable, spec.context_length);
  const path = spec.path!;
  const dir = await modelDirOf(path, spec.hf_token ?? null, ctx);
  if (existsSync(join(dir, TINKER_META_FILE)) && existsSync(join(dir, 'adapter_config.json'))) return tinkerCheckpointPolicy(spec, dir, ctx, trainable);
  if (!existsSync(join(dir, 'config.json'))) {
    throw new AppError(ErrorCode.MODEL_LOAD_FAILED, `model.path ${JSON.stringify(path)}: ${dir} is not a model folder (no config.json)`, { field: 'model.path' });
  }
  let loaded: Awaited<ReturnType<typeof inspectHfModelDir>>;
  let model: Model;
  try {
    if (!trainable && (await ensureEngineBackend()).native.ok) {
      loaded = await inspectHfModelDir(dir);
      model = Model.fromWeights(loaded.config, await mapHfModelWeights(loaded), { trainable: false });
    } else {
      if (trainable) assertFullFineTuningFits((await inspectHfModelDir(dir)).config);
      const folder = await loadHfModelDir(dir);
      loaded = folder;
      model = Model.fromWeights(folder.config, folder.weights, { trainable });
    }
  } catch (error) {
    throw new Error(`model.path ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  const chat = pickTemplate(spec.chat_template, loaded.chatTemplate?.source ?? null);
  const template = chat.name === 'folder' ? loaded.chatTemplate! : new ChatTemplate(chat.source, specialVariables(loaded.tokenizer));
  const source = path.startsWith('job:') || isUserModelRef(path) || isHubRef(path) ? `${path} (${dir})` : dir;
  ctx.log(`policy: ${source}, ${loaded.config.model_type}, ${loaded.config.num_hidden_layers} layers, chat template ${chat.name}, ${weightsSummary(model)}`);
  return makePolicy({ model, tokenizer: loaded.tokenizer, template, chat, stopTokenIds: loaded.stopTokenIds, source, dir, rawConfig: loaded.rawConfig });
}

/**
 * A Tinker checkpoint (a PEFT adapter folder whose `tinker.json` names its base): the base it was
 * trained on, loaded as a job names it, with the adapter on it. For serving: training goes on through
 * the Tinker API.
 */
async function tinkerCheckpointPolicy(spec: ModelSpec, dir: string, ctx: { paths: RunnerPaths; log(line: string): void }, trainable: boolean): Promise<Policy> {
  if (trainable) throw new Error(`model.path ${JSON.stringify(spec.path)}: a Tinker checkpoint is served, not trained here (train it on through the Tinker API)`);
  const meta = JSON.parse(await readFile(join(dir, TINKER_META_FILE), 'utf8')) as TinkerCheckpointMeta;
  if (typeof meta.base !== 'object' || meta.base === null || !('preset' in meta.base || 'path' in meta.base)) {
    throw new Error(`model.path ${JSON.stringify(spec.path)}: ${TINKER_META_FILE} names no base model`);
  }
  // A process that does not fetch from the Hub (a model server) loads an hf: base from the snapshot the runner used.
  const base = 'path' in meta.base && isHubRef(meta.base.path) && !ctx.paths.hub && meta.base_dir ? { path: meta.base_dir } : meta.base;
  const policy = await loadPolicy({ ...base, chat_template: spec.chat_template, seed: 0 }, ctx, { trainable: false });
  try {
    policy.model.loadLora(await loadLoraAdapter(dir, { modelConfig: policy.model.config }));
  } catch (error) {
    policy.dispose();
    throw new Error(`model.path ${JSON.stringify(spec.path)}: ${(error as Error).message}`);
  }
  ctx.log(`policy: Tinker checkpoint ${meta.model_id}/${meta.kind}/${meta.name} (LoRA rank ${meta.lora.rank}) on ${meta.base_model}`);
  return { ...policy, source: `${policy.source} + Tinker checkpoint ${meta.kind}/${meta.name} of ${meta.model_id}`, dir };
}

function presetPolicy(name: string, seed: number, chatTemplate: ModelSpec['chat_template'], ctx: { log(line: string): void }, trainable: boolean, contextLength?: number): Policy {
  if (!Object.prototype.hasOwnProperty.call(MODEL_PRESETS, name)) {
    throw new AppError(ErrorCode.VALIDATION, `model.preset: unknown preset "${name}" (known: ${Object.keys(MODEL_PRESETS).join(', ')})`, { field: 'model.preset' });
  }
  const tokenizer = new ByteTokenizer();
  // Presets always run with the byte tokenizer, so their vocabulary and special ids are its own: every
  // sampled id decodes.
  const config: ModelConfig = {
    ...modelPreset(name),
    vocab_size: tokenizer.vocabSize,
    bos_token_id: tokenizer.bosId ?? undefined,
    eos_token_id: tokenizer.eosId ?? undefined,
    pad_token_id: tokenizer.padId ?? undefined,
    // Rotary positions are computed, not learnt: a longer context needs no new weights, and a checkpoint
    // saves it in config.json so the trained model keeps it when loaded back.
    ...(contextLength !== undefined ? { max_position_embeddings: contextLength } : {}),
  };
  const chat = pickTemplate(chatTemplate, null);
  const template = new ChatTemplate(chat.source, specialVariables(tokenizer));
  if (trainable) assertFullFineTuningFits(config);
  const model = Model.init(config, seed, { trainable });
  const source = `preset ${name} (seed ${seed}${contextLength !== undefined ? `, context ${contextLength}` : ''})`;
  ctx.log(`policy: ${source}, chat template ${chat.name}, ${weightsSummary(model)}`);
  return makePolicy({ model, tokenizer, template, chat, stopTokenIds: tokenizer.eosId === null ? [] : [tokenizer.eosId], source, dir: null });
}

function pickTemplate(choice: ModelSpec['chat_template'], folderTemplate: string | null): PolicyChatTemplate {
  if (choice === 'plain') return { name: 'plain', source: PLAIN_TEMPLATE };
  if (choice === 'auto' && folderTemplate !== null) return { name: 'folder', source: folderTemplate };
  return { name: 'chatml', source: CHATML_TEMPLATE };
}

function specialVariables(tokenizer: Tokenizer): Record<string, string> {
  const out: Record<string, string> = {};
  const roles: Array<[string, number | null]> = [
    ['bos_token', tokenizer.bosId],
    ['eos_token', tokenizer.eosId],
    ['pad_token', tokenizer.padId],
  ];
  for (const [key, id] of roles) if (id !== null) out[key] = tokenizer.tokenToString(id);
  return out;
}

interface PolicyParts {
  model: Model;
  tokenizer: Tokenizer;
  template: ChatTemplate;
  chat: PolicyChatTemplate;
  stopTokenIds: number[];
  source: string;
  dir: string | null;
  rawConfig?: Record<string, unknown>;
}

function makePolicy(p: PolicyParts): Policy {
  const { model, tokenizer, template } = p;
  const render = (messages: readonly Message[], addGenerationPrompt: boolean) =>
    template.render(
      messages.map((m) => ({ role: m.role, content: m.content })),
      { addGenerationPrompt },
    );
  // What the template writes after an assistant message's content (ChatML: `<|im_end|>\n`); found by
  // rendering a stand-in conversation, so any template works.
  const probe: Message[] = [
    { role: 'user', content: 'x' },
    { role: 'assistant', content: CONTENT_MARK },
  ];
  const closing = afterMark(render(probe, false));
  return {
    model,
    tokenizer,
    config: model.config,
    stopTokenIds: p.stopTokenIds,
    contextLength: model.config.max_position_embeddings,
    source: p.source,
    dir: p.dir,
    chatTemplate: p.chat,
    ...(p.rawConfig ? { rawConfig: p.rawConfig } : {}),
    renderPrompt: (messages) => tokenizer.encode(render(messages, true)),
    renderObservation: (messages, lastTokenId = p.stopTokenIds[0]) => {
      let text = afterMark(render([...probe, ...messages], true));
      const stopText = lastTokenId === undefined || !p.stopTokenIds.includes(lastTokenId) ? null : tokenizer.decode([lastTokenId]);
      if (stopText !== null && closing.startsWith(stopText) && text.startsWith(stopText)) text = text.slice(stopText.length);
      return tokenizer.encode(text);
    },
    dispose: () => model.dispose(),
  };
}

function afterMark(text: string): string {
  const at = text.lastIndexOf(CONTENT_MARK);
  if (at === -1) throw new Error('the chat template drops assistant message contents; cannot render conversations with it');
  return text.slice(at + CONTENT_MARK.length);
}
