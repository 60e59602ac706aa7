import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError, isEngineError } from '../errors';
import { toHfConfigJson, validateModelConfig, type ModelConfig } from '../model/model-config';
import { validateWeights, weightSpecs, type NamedWeights } from '../model/weights';
import { ChatTemplate } from '../tokenizer/chat-template';
import { isSerializableTokenizer, type SerializableTokenizer, type Tokenizer } from '../tokenizer/tokenizer';
import { tokenizerFromJson } from '../tokenizer/tokenizer-from-json';
import { MappedFile, NativeTensor } from '../native/native-tensor';
import { SafetensorsFile, dtypeBytes, writeSafetensors, type SafetensorsDtype, type SafetensorsFloatDtype } from './safetensors';

/**
 * Hugging Face model folders, the layout `transformers` `save_pretrained` writes and vLLM, llama.cpp's
 * `convert_hf_to_gguf.py` and `from_pretrained` read: `config.json`, `model.safetensors` (or shards
 * `model-00001-of-0000N.safetensors` with `model.safetensors.index.json`), `generation_config.json`,
 * `tokenizer.json`, `tokenizer_config.json` (special-token roles, `chat_template`) or `chat_template.jinja`.
 */

/** `architectures` entry each supported `model_type` must have. */
export const SUPPORTED_ARCHITECTURES: Readonly<Record<ModelConfig['model_type'], string>> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
};

/** transformers' default shard size for `save_pretrained` ("5GB"). */
export const DEFAULT_MAX_SHARD_BYTES = 5_000_000_000;

const TORCH_DTYPES: Readonly<Record<string, SafetensorsFloatDtype>> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' };
const TORCH_DTYPE_NAMES: Readonly<Record<SafetensorsFloatDtype, string>> = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' };

/** One tensor of a folder's weight files. */
export interface HfTensorEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** File name inside the folder. */
  file: string;
}

/** Everything about a model folder except the weight values. */
export interface HfModelDirInfo {
  dir: string;
  config: ModelConfig;
  /** `config.json` as written, fields the engine does not model included (kept on save). */
  rawConfig: Record<string, unknown>;
  /** `generation_config.json`, or null. */
  generationConfig: Record<string, unknown> | null;
  tokenizer: SerializableTokenizer;
  tokenizerConfig: Record<string, unknown>;
  chatTemplate: ChatTemplate | null;
  /** Ids that end a generation: generation_config's `eos_token_id`(s), then config's, then the tokenizer's EOS. */
  stopTokenIds: number[];
  /** `torch_dtype` (or `dtype`) of config.json, or null. */
  torchDtype: string | null;
  /** Dtype of the stored model weights, or 'mixed'. */
  storedDtype: SafetensorsDtype | 'mixed';
  /** Weight files, in order. */
  weightFiles: string[];
  /** Every tensor in the weight files. */
  tensors: HfTensorEntry[];
  /** Tensors present in the files that the model does not use (a tied `lm_head.weight`, rotary caches). */
  ignoredTensors: string[];
}

/** A loaded model folder. */
export interface HfModelDir extends HfModelDirInfo {
  /** The model's weights as float32, by Hugging Face name. */
  weights: NamedWeights;
}

/** What {@link saveHfModelDir} writes. A loaded {@link HfModelDir} fits as it is. */
export interface HfModelToSave {
  config: ModelConfig;
  weights: NamedWeights;
  /** Must be able to write itself ({@link ByteTokenizer} or {@link HfTokenizer}). */
  tokenizer: Tokenizer;
  chatTemplate?: ChatTemplate | string | null;
  generationConfig?: Record<string, unknown> | null;
  /** An original config.json whose extra fields (e.g. `transformers_version`, `use_cache`) are kept. */
  rawConfig?: Record<string, unknown>;
}

/** Options of {@link saveHfModelDir}. */
export interface SaveHfModelOptions {
  /** Stored weight dtype; default: the `torch_dtype` of `rawConfig` when it is float32/float16/bfloat16, else F32. */
  dtype?: SafetensorsFloatDtype;
  /** Largest shard before a new one starts (a tensor larger than this gets a shard of its own). Default 5 GB. */
  maxShardBytes?: number;
}

/** What {@link saveHfModelDir} wrote. */
export interface SavedHfModel {
  dir: string;
  dtype: SafetensorsFloatDtype;
  /** Files written, in order. */
  files: string[];
  weightFiles: string[];
  /** Bytes of tensor data (`metadata.total_size` of the index). */
  totalSize: number;
}

function ioError(message: string, field?: string): never {
  throw new EngineError('ENGINE_IO', message, field);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function readJson(path: string, required: true): Promise<Record<string, unknown>>;
async function readJson(path: string, required: false): Promise<Record<string, unknown> | null>;
async function readJson(path: string, required: boolean): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (!required && (e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    ioError(`cannot read ${path}: ${(e as Error).message}`, path);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    ioError(`${path} is not valid JSON: ${(e as Error).message}`, path);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) ioError(`${path} must hold a JSON object`, path);
  return value as Record<string, unknown>;
}

/**
 * Checks config.json's architecture before its fields, so an unsupported model is refused with its
 * name rather than with a confusing message about some field.
 */
export function checkArchitecture(raw: Record<string, unknown>, where = 'config.json'): void {
  const modelType = raw.model_type;
  const archs = Array.isArray(raw.architectures) ? raw.architectures.map(String) : [];
  const supported = Object.entries(SUPPORTED_ARCHITECTURES)
    .map(([t, a]) => `${t} (${a})`)
    .join(', ');
  if (typeof modelType !== 'string' || !Object.prototype.hasOwnProperty.call(SUPPORTED_ARCHITECTURES, modelType)) {
    throw new EngineError(
      'ENGINE_INVALID_CONFIG',
      `${where}: model_type ${JSON.stringify(modelType)}${archs.length ? ` (architectures: ${archs.join(', ')})` : ''} is not supported; supported: ${supported}`,
      'model_type',
    );
  }
  const expected = SUPPORTED_ARCHITECTURES[modelType as ModelConfig['model_type']];
  const wrong = archs.find((a) => a !== expected);
  if (wrong !== undefined) {
    throw new EngineError('ENGINE_INVALID_CONFIG', `${where}: architecture ${wrong} (model_type ${modelType}) is not supported; expected ${expected}`, 'architectures');
  }
}

function tokenName(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return null;
}

function pickChatTemplate(raw: unknown, where: string): string | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === 'string') return raw;
  // transformers also stores several named templates: [{ name: 'default', template: '…' }, { name: 'tool_use', … }].
  if (Array.isArray(raw)) {
    const named = raw.filter((t): t is { name: string; template: string } => t && typeof t.name === 'string' && typeof t.template === 'string');
    const chosen = named.find((t) => t.name === 'default') ?? named[0];
    if (chosen) return chosen.template;
  }
  ioError(`${where}: chat_template must be a string or a list of { name, template }`, 'chat_template');
}

function ids(value: unknown): number[] {
  if (typeof value === 'number' && Number.isInteger(value)) return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number' && Number.isInteger(v));
  return [];
}

function isSafeFileName(name: string): boolean {
  return name.length > 0 && !name.includes('/') && !name.includes('\\') && name !== '.' && name !== '..' && !name.includes('\0');
}

/** The weight files of a folder and which tensors each holds (from the index when sharded). */
async function listWeightFiles(dir: string): Promise<{ files: string[]; indexMap: Map<string, string> | null }> {
  const indexPath = join(dir, 'model.safetensors.index.json');
  const index = await readJson(indexPath, false);
  if (index) {
    const map = index.weight_map;
    if (!map || typeof map !== 'object' || Array.isArray(map)) ioError(`${indexPath}: weight_map must be an object of tensor name to file name`, indexPath);
    const indexMap = new Map<string, string>();
    for (const [name, file] of Object.entries(map as Record<string, unknown>)) {
      if (typeof file !== 'string' || !isSafeFileName(file))
        ioError(`${indexPath}: weight_map["${name}"] must be a file name in the folder, got ${JSON.stringify(file)}`, indexPath);
      indexMap.set(name, file);
    }
    return { files: [...new Set(indexMap.values())].sort(), indexMap };
  }
  if (await exists(join(dir, 'model.safetensors'))) return { files: ['model.safetensors'], indexMap: null };
  let listing: string[] = [];
  try {
    listing = await readdir(dir);
  } catch (e) {
    ioError(`cannot read model folder ${dir}: ${(e as Error).message}`, dir);
  }
  const hint = listing.some((f) => f.endsWith('.bin') || f.endsWith('.pt') || f.endsWith('.pth'))
    ? ' (PyTorch pickle weights are not read: convert them to safetensors, e.g. with transformers `save_pretrained(..., safe_serialization=True)`)'
    : listing.some((f) => f.endsWith('.gguf'))
      ? ' (GGUF files are not read)'
      : '';
  ioError(`${dir} has neither model.safetensors nor model.safetensors.index.json${hint}`, dir);
}

/** Tensors a checkpoint may carry that the model does not use. */
function isIgnorable(name: string, config: ModelConfig): boolean {
  return (config.tie_word_embeddings && name === 'lm_head.weight') || /\.rotary_emb\.inv_freq$/.test(name);
}

async function inspectWeights(dir: string, config: ModelConfig, allowExtra: boolean) {
  const { files, indexMap } = await listWeightFiles(dir);
  const tensors: HfTensorEntry[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    const handle = await SafetensorsFile.open(join(dir, file));
    try {
      for (const info of handle.header.tensors) {
        // A tensor the index does not place in this file is not loaded by transformers either.
        if (indexMap && indexMap.get(info.name) !== file) continue;
        const previous = seen.get(info.name);
        if (previous !== undefined) ioError(`${dir}: tensor ${info.name} is in both ${previous} and ${file}`, info.name);
        seen.set(info.name, file);
        tensors.push({ name: info.name, dtype: info.dtype, shape: [...info.shape], file });
      }
    } finally {
      await handle.close();
    }
  }
  if (indexMap) {
    for (const [name, file] of indexMap) {
      if (!seen.has(name)) ioError(`${dir}: model.safetensors.index.json places ${name} in ${file}, which does not hold it`, name);
    }
  }
  const wanted = new Set(weightSpecs(config).map((s) => s.name));
  const ignored: string[] = [];
  for (const t of tensors) {
    if (wanted.has(t.name)) continue;
    if (isIgnorable(t.name, config) || allowExtra) ignored.push(t.name);
    else throw new EngineError('ENGINE_INVALID_WEIGHTS', `${dir}: ${t.file} holds ${t.name}, which a ${config.model_type} model with this config.json does not have`, t.name);
  }
  const used = tensors.filter((t) => wanted.has(t.name));
  const dtypes = new Set(used.map((t) => t.dtype));
  const storedDtype = dtypes.size === 1 ? [...dtypes][0] : 'mixed';
  return { files, tensors, ignored, storedDtype } as const;
}

/**
 * Reads a model folder's config, tokenizer, chat template and weight headers, without the weight
 * values (fast even for large models: `opentinker model info`).
 *
 * @example
 * ```ts
 * const info = await inspectHfModelDir('/models/Qwen2.5-0.5B-Instruct');
 * info.config.num_hidden_layers; // 24
 * info.storedDtype; // 'BF16'
 * ```
 */
export async function inspectHfModelDir(dir: string, options: { allowExtraWeights?: boolean } = {}): Promise<HfModelDirInfo> {
  const configPath = join(dir, 'config.json');
  if (!(await exists(dir))) ioError(`model folder ${dir} does not exist`, dir);
  const rawConfig = await readJson(configPath, true);
  checkArchitecture(rawConfig, configPath);
  let config: ModelConfig;
  try {
    config = validateModelConfig(rawConfig);
  } catch (e) {
    if (isEngineError(e)) throw new EngineError(e.code, `${configPath}: ${e.message}`, e.field);
    throw e;
  }
  const generationConfig = await readJson(join(dir, 'generation_config.json'), false);

  const tokenizerPath = join(dir, 'tokenizer.json');
  if (!(await exists(tokenizerPath))) {
    ioError(`${dir} has no tokenizer.json (only "fast" tokenizers are read; transformers writes tokenizer.json when it saves a fast tokenizer)`, tokenizerPath);
  }
  const tokenizerConfigPath = join(dir, 'tokenizer_config.json');
  const tokenizerConfig = (await readJson(tokenizerConfigPath, false)) ?? {};
  let tokenizer: SerializableTokenizer;
  try {
    tokenizer = tokenizerFromJson(await readJson(tokenizerPath, true), tokenizerConfig);
  } catch (e) {
    if (isEngineError(e)) throw new EngineError(e.code, `${tokenizerPath}: ${e.message}`, e.field);
    throw e;
  }
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new EngineError('ENGINE_INVALID_CONFIG', `${dir}: the tokenizer has ${tokenizer.vocabSize} ids but config.json's vocab_size is ${config.vocab_size}`, 'vocab_size');
  }

  // Newer transformers save the template beside the config as chat_template.jinja, which then wins.
  const jinjaPath = join(dir, 'chat_template.jinja');
  const templateSource = (await exists(jinjaPath)) ? await readFile(jinjaPath, 'utf8') : pickChatTemplate(tokenizerConfig.chat_template, tokenizerConfigPath);
  const specialVariables: Record<string, string> = {};
  for (const key of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
    const name = tokenName(tokenizerConfig[key]);
    if (name !== null) specialVariables[key] = name;
  }
  let chatTemplate: ChatTemplate | null = null;
  if (templateSource !== null) {
    try {
      chatTemplate = new ChatTemplate(templateSource, specialVariables);
    } catch (e) {
      if (isEngineError(e)) throw new EngineError(e.code, `${dir}: ${e.message}`, e.field);
      throw e;
    }
  }

  const stopTokenIds = [...new Set([...ids(generationConfig?.eos_token_id), ...ids(config.eos_token_id), ...(tokenizer.eosId !== null ? [tokenizer.eosId] : [])])];
  const outside = stopTokenIds.find((id) => id < 0 || id >= config.vocab_size);
  if (outside !== undefined) {
    throw new EngineError('ENGINE_INVALID_CONFIG', `${dir}: eos_token_id ${outside} (generation_config.json) is outside the vocabulary of ${config.vocab_size}`, 'eos_token_id');
  }
  const torchDtypeRaw = rawConfig.torch_dtype ?? rawConfig.dtype;
  const weights = await inspectWeights(dir, config, options.allowExtraWeights ?? false);
  return {
    dir,
    config,
    rawConfig,
    generationConfig,
    tokenizer,
    tokenizerConfig,
    chatTemplate,
    stopTokenIds,
    torchDtype: typeof torchDtypeRaw === 'string' ? torchDtypeRaw : null,
    storedDtype: weights.storedDtype,
    weightFiles: weights.files,
    tensors: weights.tensors,
    ignoredTensors: weights.ignored,
  };
}

/**
 * Loads a Hugging Face model folder: config (validated; unsupported architectures are refused by
 * name), weights as float32 from single or sharded safetensors of any float dtype, tokenizer, chat
 * template and generation config.
 *
 * @example
 * ```ts
 * const { config, weights, tokenizer, chatTemplate } = await loadHfModelDir('/models/Qwen2.5-0.5B-Instruct');
 * const model = Model.fromWeights(config, weights);
 * ```
 */
export async function loadHfModelDir(dir: string, options: { allowExtraWeights?: boolean } = {}): Promise<HfModelDir> {
  const info = await inspectHfModelDir(dir, options);
  const specs = weightSpecs(info.config);
  const wanted = new Set(specs.map((s) => s.name));
  const read: NamedWeights = new Map();
  for (const file of info.weightFiles) {
    const handle = await SafetensorsFile.open(join(dir, file));
    try {
      for (const t of info.tensors) {
        if (t.file === file && wanted.has(t.name)) read.set(t.name, await handle.readFloat32(t.name));
      }
    } finally {
      await handle.close();
    }
  }
  // Hugging Face order, whatever the order of the files.
  const weights: NamedWeights = new Map();
  for (const s of specs) if (read.has(s.name)) weights.set(s.name, read.get(s.name)!);
  try {
    validateWeights(info.config, weights);
  } catch (e) {
    if (isEngineError(e)) throw new EngineError(e.code, `${dir}: ${e.message}`, e.field);
    throw e;
  }
  return { ...info, weights };
}

/**
 * The weights of an inspected folder held outside the wasm heap, for a frozen model
 * (`Model.fromWeights(info.config, weights, { trainable: false })`, which takes them over): F32, BF16 and
 * F16 tensors are views of the memory-mapped safetensors files — nothing is read or copied until a
 * kernel touches the pages, and the page cache is shared with every process using the same files —
 * other dtypes are converted to float32 copies. Needs the engine's native addon (`initBackend()` loads it).
 *
 * @example
 * ```ts
 * const info = await inspectHfModelDir('/models/Qwen2.5-7B-Instruct');
 * const model = Model.fromWeights(info.config, await mapHfModelWeights(info), { trainable: false });
 * ```
 */
export async function mapHfModelWeights(info: HfModelDirInfo): Promise<Map<string, NativeTensor>> {
  const wanted = new Set(weightSpecs(info.config).map((s) => s.name));
  const out = new Map<string, NativeTensor>();
  try {
    for (const file of info.weightFiles) {
      const path = join(info.dir, file);
      const handle = await SafetensorsFile.open(path);
      try {
        const mapped = MappedFile.open(path);
        for (const t of info.tensors) {
          if (t.file !== file || !wanted.has(t.name)) continue;
          const at = handle.info(t.name)!;
          out.set(
            t.name,
            t.dtype === 'F32' || t.dtype === 'BF16' || t.dtype === 'F16'
              ? NativeTensor.view(mapped, handle.header.dataStart + at.dataOffsets[0], t.shape, t.dtype)
              : NativeTensor.fromFloat32((await handle.readFloat32(t.name)).data, t.shape),
          );
        }
      } finally {
        await handle.close();
      }
    }
    validateWeights(info.config, out);
  } catch (e) {
    for (const t of out.values()) t.dispose();
    if (isEngineError(e)) throw new EngineError(e.code, `${info.dir}: ${e.message}`, e.field);
    throw e;
  }
  return out;
}

function shardName(i: number, n: number): string {
  return `model-${String(i + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
}

function defaultDtype(rawConfig: Record<string, unknown> | undefined): SafetensorsFloatDtype {
  const t = rawConfig?.torch_dtype ?? rawConfig?.dtype;
  return typeof t === 'string' && Object.prototype.hasOwnProperty.call(TORCH_DTYPES, t) ? TORCH_DTYPES[t] : 'F32';
}

/**
 * Saves a model in the Hugging Face layout: `config.json` (with `architectures` and `torch_dtype`),
 * weights in HF order as `model.safetensors` or, past `maxShardBytes`, shards plus
 * `model.safetensors.index.json` (`metadata.total_size`, sorted `weight_map`), `generation_config.json`,
 * `tokenizer.json` and `tokenizer_config.json` with the chat template. A tied head is not written (as
 * transformers does). Weight files of an earlier save in the same folder that this save does not
 * rewrite are removed, so loaders never mix old and new shards.
 *
 * @example
 * ```ts
 * await saveHfModelDir('out/step-100', { config, weights: model.exportWeights(), tokenizer, chatTemplate }, { dtype: 'BF16' });
 * // vLLM: `vllm serve out/step-100`; llama.cpp: `convert_hf_to_gguf.py out/step-100`
 * ```
 */
export async function saveHfModelDir(dir: string, model: HfModelToSave, options: SaveHfModelOptions = {}): Promise<SavedHfModel> {
  const { config, weights, tokenizer } = model;
  if (!isSerializableTokenizer(tokenizer)) ioError('the tokenizer cannot be saved (use ByteTokenizer or HfTokenizer)', 'tokenizer');
  validateWeights(config, weights);
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new EngineError('ENGINE_INVALID_CONFIG', `the tokenizer has ${tokenizer.vocabSize} ids but vocab_size is ${config.vocab_size}`, 'vocab_size');
  }
  const dtype = options.dtype ?? defaultDtype(model.rawConfig);
  if (!Object.prototype.hasOwnProperty.call(TORCH_DTYPE_NAMES, dtype)) ioError(`dtype must be F32, F16 or BF16, got ${JSON.stringify(dtype)}`, 'dtype');
  const maxShardBytes = options.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES;
  if (!(maxShardBytes > 0)) ioError('maxShardBytes must be positive', 'maxShardBytes');
  await mkdir(dir, { recursive: true });

  // Shards in Hugging Face order, greedily filled.
  const shards: string[][] = [];
  let current: string[] = [];
  let currentBytes = 0;
  let totalSize = 0;
  for (const spec of weightSpecs(config)) {
    const bytes = spec.shape.reduce((a, b) => a * b, 1) * dtypeBytes(dtype);
    if (current.length > 0 && currentBytes + bytes > maxShardBytes) {
      shards.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(spec.name);
    currentBytes += bytes;
    totalSize += bytes;
  }
  if (current.length > 0) shards.push(current);

  const weightFiles = shards.length === 1 ? ['model.safetensors'] : shards.map((_, i) => shardName(i, shards.length));
  const files: string[] = [];
  const weightMap: Record<string, string> = {};
  for (let i = 0; i < shards.length; i++) {
    await writeSafetensors(
      join(dir, weightFiles[i]),
      shards[i].map((name) => [name, weights.get(name)!]),
      { dtype, metadata: { format: 'pt' } },
    );
    for (const name of shards[i]) weightMap[name] = weightFiles[i];
    files.push(weightFiles[i]);
  }
  if (shards.length > 1) {
    const sorted = Object.fromEntries(
      Object.keys(weightMap)
        .sort()
        .map((k) => [k, weightMap[k]]),
    );
    await writeFile(join(dir, 'model.safetensors.index.json'), `${JSON.stringify({ metadata: { total_size: totalSize }, weight_map: sorted }, null, 2)}\n`);
    files.push('model.safetensors.index.json');
  }
  // Drop weight files of an earlier save that this one did not rewrite.
  for (const f of await readdir(dir)) {
    const stale = (f === 'model.safetensors' || f === 'model.safetensors.index.json' || /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)) && !files.includes(f);
    if (stale) await rm(join(dir, f), { force: true });
  }

  const extra = { ...(model.rawConfig ?? {}) };
  delete extra.torch_dtype;
  delete extra.dtype;
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(toHfConfigJson(config, extra, TORCH_DTYPE_NAMES[dtype]), null, 2)}\n`);
  files.push('config.json');

  const generationConfig =
    model.generationConfig ??
    Object.fromEntries(
      Object.entries({ bos_token_id: config.bos_token_id, eos_token_id: config.eos_token_id, pad_token_id: config.pad_token_id }).filter(([, v]) => v !== undefined),
    );
  if (Object.keys(generationConfig).length > 0) {
    await writeFile(join(dir, 'generation_config.json'), `${JSON.stringify(generationConfig, null, 2)}\n`);
    files.push('generation_config.json');
  }

  const template = model.chatTemplate instanceof ChatTemplate ? model.chatTemplate.source : (model.chatTemplate ?? undefined);
  await writeFile(join(dir, 'tokenizer.json'), `${JSON.stringify(tokenizer.toTokenizerJson(), null, 2)}\n`);
  const tokenizerConfig = tokenizer.toTokenizerConfig(template);
  await writeFile(join(dir, 'tokenizer_config.json'), `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
  files.push('tokenizer.json', 'tokenizer_config.json');
  // A chat_template.jinja left from an earlier save would override tokenizer_config.json's template.
  await rm(join(dir, 'chat_template.jinja'), { force: true });
  return { dir, dtype, files, weightFiles, totalSize };
}
