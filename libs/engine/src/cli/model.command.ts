import { engineNotice } from '../native/addon';
import type { Command } from 'commander';
import { EngineError, isEngineError } from '../errors';
import { inspectHfModelDir, loadHfModelDir, type HfModelDirInfo } from '../io/hf-model-dir';
import { dtypeBytes } from '../io/safetensors';
import { headDim } from '../model/model-config';
import { countParameters } from '../model/weights';
import type { BackendInfo, BackendName } from '../backend';
import { StopStringScanner } from '../tokenizer/stop-strings';
import type { Tokenizer } from '../tokenizer/tokenizer';

/**
 * `opentinker model info|sample|score DIR`: look into a Hugging Face model folder, sample from it, and
 * print each token's log-prob under it (to debug tokenisation and rewards). This module loads
 * TensorFlow.js only inside `sample` and `score`, so registering the commands costs nothing.
 */

/** What `model info` reports. */
export interface ModelInfoReport {
  dir: string;
  architecture: string;
  modelType: string;
  /** Parameters of the model (a tied head counted once). */
  parameters: number;
  layers: number;
  hiddenSize: number;
  intermediateSize: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  contextLength: number;
  ropeTheta: number;
  tiedEmbeddings: boolean;
  torchDtype: string | null;
  storedDtype: string;
  weightFiles: string[];
  /** Bytes of tensor data in the weight files (the model's weights only). */
  weightBytes: number;
  vocabSize: number;
  tokenizerVocabSize: number;
  tokenizer: string;
  specialTokens: { bos: TokenRef | null; eos: TokenRef | null; pad: TokenRef | null; all: TokenRef[] };
  stopTokenIds: number[];
  chatTemplate: boolean;
  ignoredTensors: string[];
}

/** A special token by id and text. */
export interface TokenRef {
  id: number;
  token: string;
}

/** Options of {@link modelSample}. */
export interface ModelSampleOptions {
  prompt: string;
  maxNewTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  /** Render the prompt as a user turn with the folder's chat template (and `system` first when given). */
  chat?: boolean;
  system?: string;
  /** Stop strings, in addition to the folder's stop token ids. */
  stop?: string[];
  backend?: BackendName;
  /** A PEFT LoRA adapter folder to apply on top of the model. */
  adapter?: string;
}

/** What `model sample` reports. */
export interface ModelSampleReport {
  backend: string;
  /** The text the model was given (after the chat template, when `chat`). */
  prompt: string;
  promptTokens: number[];
  tokens: number[];
  /** `log p(token)` under the model at temperature 1, per new token. */
  logProbs: number[];
  /** The new text, special tokens and a matched stop string left out. */
  text: string;
  finishReason: 'stop' | 'length';
  /** The stop string that ended it, if one did. */
  stop: string | null;
}

/** Options of {@link modelScore}. */
export interface ModelScoreOptions {
  text: string;
  /** Prepend the tokenizer's BOS as its post-processor would (default false: text as given). */
  addSpecialTokens?: boolean;
  backend?: BackendName;
  /** A PEFT LoRA adapter folder to apply on top of the model. */
  adapter?: string;
}

/** One scored token. */
export interface ScoredToken {
  index: number;
  id: number;
  /** The vocabulary entry (byte-level BPE shows a space as `Ġ`). */
  token: string;
  /** The token's text on its own. */
  text: string;
  /** `log p(token | previous tokens)`; null for the first token, which has no context. */
  logProb: number | null;
  /** Entropy (nats) of the distribution the token was drawn from; null for the first token. */
  entropy: number | null;
}

/** What `model score` reports. */
export interface ModelScoreReport {
  backend: string;
  tokens: ScoredToken[];
  /** Sum of the log-probs of every token after the first. */
  sumLogProb: number;
  meanLogProb: number | null;
  perplexity: number | null;
}

function tokenRef(tokenizer: Tokenizer, id: number | null): TokenRef | null {
  return id === null ? null : { id, token: tokenizer.tokenToString(id) };
}

function architectureOf(info: HfModelDirInfo): string {
  const archs = info.rawConfig.architectures;
  return Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : info.config.model_type === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM';
}

/**
 * Describes a model folder without reading its weights.
 *
 * @example
 * ```ts
 * const report = await modelInfo('/models/Qwen2.5-0.5B-Instruct');
 * report.parameters; // 494032768
 * ```
 */
export async function modelInfo(dir: string): Promise<ModelInfoReport> {
  const info = await inspectHfModelDir(dir);
  const c = info.config;
  const used = new Set(info.tensors.map((t) => t.name).filter((n) => !info.ignoredTensors.includes(n)));
  const weightBytes = info.tensors.filter((t) => used.has(t.name)).reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1) * dtypeBytes(t.dtype), 0);
  const tok = info.tokenizer;
  return {
    dir,
    architecture: architectureOf(info),
    modelType: c.model_type,
    parameters: countParameters(c),
    layers: c.num_hidden_layers,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    heads: c.num_attention_heads,
    kvHeads: c.num_key_value_heads,
    headDim: headDim(c),
    contextLength: c.max_position_embeddings,
    ropeTheta: c.rope_theta,
    tiedEmbeddings: c.tie_word_embeddings,
    torchDtype: info.torchDtype,
    storedDtype: info.storedDtype,
    weightFiles: info.weightFiles,
    weightBytes,
    vocabSize: c.vocab_size,
    tokenizerVocabSize: tok.vocabSize,
    tokenizer: tok.constructor.name,
    specialTokens: {
      bos: tokenRef(tok, tok.bosId),
      eos: tokenRef(tok, tok.eosId),
      pad: tokenRef(tok, tok.padId),
      all: [...tok.specialTokens].map(([token, id]) => ({ id, token })).sort((a, b) => a.id - b.id),
    },
    stopTokenIds: info.stopTokenIds,
    chatTemplate: info.chatTemplate !== null,
    ignoredTensors: info.ignoredTensors,
  };
}

function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

const refText = (r: TokenRef | null) => (r ? `${r.token} (${r.id})` : '-');

/** The human-readable form of {@link modelInfo}'s report. */
export function formatModelInfo(r: ModelInfoReport): string {
  const lines = [
    `Model folder:   ${r.dir}`,
    `Architecture:   ${r.architecture} (model_type ${r.modelType})`,
    `Parameters:     ${r.parameters.toLocaleString('en-US')}${r.tiedEmbeddings ? ' (output head tied to the embedding)' : ''}`,
    `Shape:          ${r.layers} layers, hidden ${r.hiddenSize}, MLP ${r.intermediateSize}, ${r.heads} heads (${r.kvHeads} key/value), head_dim ${r.headDim}`,
    `Context:        ${r.contextLength} positions, rope_theta ${r.ropeTheta}`,
    `Weights:        ${r.storedDtype} in ${r.weightFiles.length} file${r.weightFiles.length === 1 ? '' : 's'} (${bytesText(r.weightBytes)}); torch_dtype ${r.torchDtype ?? '-'}`,
    `Vocabulary:     ${r.vocabSize} (tokenizer: ${r.tokenizerVocabSize} ids, ${r.tokenizer})`,
    `Special tokens: bos ${refText(r.specialTokens.bos)}, eos ${refText(r.specialTokens.eos)}, pad ${refText(r.specialTokens.pad)}`,
    `                all: ${r.specialTokens.all.map((t) => `${t.token} (${t.id})`).join(', ') || '-'}`,
    `Stop token ids: ${r.stopTokenIds.join(', ') || '-'}`,
    `Chat template:  ${r.chatTemplate ? 'yes' : 'no'}`,
  ];
  if (r.ignoredTensors.length > 0) lines.push(`Ignored:        ${r.ignoredTensors.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

function backendText(b: BackendInfo): string {
  return b.name === 'wasm' ? `wasm${b.simd ? ' (SIMD)' : ''}` : b.name === 'tensorflow' ? `tensorflow (${b.package})` : b.name;
}

/** Loads a folder and a backend, runs `fn` with the model, and frees the model's tensors. */
async function withModel<T>(
  dir: string,
  backend: BackendName | undefined,
  adapter: string | undefined,
  fn: (ctx: { info: Awaited<ReturnType<typeof loadHfModelDir>>; model: import('../model/transformer').Model; backend: string }) => T,
): Promise<T> {
  const { initBackend } = await import('../backend.js');
  const { Model } = await import('../model/transformer.js');
  const backendInfo = await initBackend(backend ? { backend } : {});
  const info = await loadHfModelDir(dir);
  const model = Model.fromWeights(info.config, info.weights, { trainable: false });
  try {
    if (adapter) {
      const { loadLoraAdapter } = await import('../io/peft-adapter.js');
      model.loadLora(await loadLoraAdapter(adapter, { modelConfig: info.config }));
    }
    return fn({ info, model, backend: backendText(backendInfo) });
  } finally {
    model.dispose();
  }
}

/**
 * Samples one continuation of a prompt (or, with `chat`, of a user turn under the folder's chat
 * template), ending at a stop token id, a stop string, or `maxNewTokens`.
 *
 * @example
 * ```ts
 * const out = await modelSample('out/step-100', { prompt: '2+2=', chat: true, temperature: 0, maxNewTokens: 8 });
 * out.text; // '4'
 * ```
 */
export async function modelSample(dir: string, o: ModelSampleOptions): Promise<ModelSampleReport> {
  const { sample } = await import('../sampling/sampler.js');
  return withModel(dir, o.backend, o.adapter, ({ info, model, backend }) => {
    let prompt = o.prompt;
    if (o.chat) {
      if (!info.chatTemplate) throw new EngineError('ENGINE_INVALID_OPTIONS', `${dir} has no chat template; sample without --chat`, 'chat');
      const messages = [...(o.system !== undefined ? [{ role: 'system', content: o.system }] : []), { role: 'user', content: o.prompt }];
      prompt = info.chatTemplate.render(messages, { addGenerationPrompt: true });
    }
    const promptTokens = info.tokenizer.encode(prompt);
    if (promptTokens.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'the prompt encodes to no tokens', 'prompt');
    const stops = o.stop ?? [];
    const scanner = new StopStringScanner(info.tokenizer, stops, { skipSpecial: true });
    let seen = 0;
    const [seq] = sample(model, [promptTokens], {
      maxNewTokens: o.maxNewTokens ?? 64,
      temperature: o.temperature ?? 1,
      topP: o.topP ?? 1,
      topK: o.topK ?? 0,
      seed: o.seed ?? 0,
      stopTokenIds: info.stopTokenIds,
      stopCheck: (_, generated) => {
        let match = null;
        while (seen < generated.length) match = scanner.push(generated[seen++]);
        return match !== null;
      },
    });
    const match = scanner.match;
    const text = match ? match.text : info.tokenizer.decode(seq.tokens, { skipSpecial: true });
    return { backend, prompt, promptTokens, tokens: seq.tokens, logProbs: seq.logProbs, text, finishReason: seq.finishReason, stop: match ? match.stop : null };
  });
}

/**
 * Scores a text under the model: each token with its log-prob given the tokens before it.
 *
 * @example
 * ```ts
 * const { tokens, perplexity } = await modelScore('out/step-100', { text: '<|im_start|>user\n2+2=<|im_end|>' });
 * ```
 */
export async function modelScore(dir: string, o: ModelScoreOptions): Promise<ModelScoreReport> {
  const { padBatch } = await import('../model/token-batch.js');
  return withModel(dir, o.backend, o.adapter, ({ info, model, backend }) => {
    const ids = info.tokenizer.encode(o.text, { addSpecialTokens: o.addSpecialTokens ?? false });
    if (ids.length === 0) throw new EngineError('ENGINE_INVALID_INPUT', 'the text encodes to no tokens', 'text');
    if (ids.length > info.config.max_position_embeddings) {
      throw new EngineError('ENGINE_INVALID_INPUT', `the text is ${ids.length} tokens, longer than the model's context of ${info.config.max_position_embeddings}`, 'text');
    }
    const scores = model.scoreTokens(padBatch([ids]));
    const tokens: ScoredToken[] = ids.map((id, index) => ({
      index,
      id,
      token: info.tokenizer.tokenToString(id),
      text: info.tokenizer.decode([id]),
      logProb: scores.valid[index] ? scores.logProbs[index] : null,
      entropy: scores.valid[index] ? scores.entropy[index] : null,
    }));
    const scored = tokens.filter((t) => t.logProb !== null);
    const sumLogProb = scored.reduce((a, t) => a + (t.logProb as number), 0);
    const meanLogProb = scored.length > 0 ? sumLogProb / scored.length : null;
    return { backend, tokens, sumLogProb, meanLogProb, perplexity: meanLogProb === null ? null : Math.exp(-meanLogProb) };
  });
}

/** The human-readable form of {@link modelScore}'s report: one token per line. */
export function formatModelScore(r: ModelScoreReport): string {
  const width = Math.max(2, String(r.tokens.length - 1).length);
  const idWidth = Math.max(2, ...r.tokens.map((t) => String(t.id).length));
  const lines = [`${'#'.padStart(width)}  ${'id'.padStart(idWidth)}  ${'logprob'.padStart(10)}  ${'entropy'.padStart(8)}  token`];
  for (const t of r.tokens) {
    const lp = t.logProb === null ? '-' : t.logProb.toFixed(4);
    const ent = t.entropy === null ? '-' : t.entropy.toFixed(3);
    const shown = JSON.stringify(t.text) + (t.token !== t.text ? `  ${JSON.stringify(t.token)}` : '');
    lines.push(`${String(t.index).padStart(width)}  ${String(t.id).padStart(idWidth)}  ${lp.padStart(10)}  ${ent.padStart(8)}  ${shown}`);
  }
  const n = r.tokens.filter((t) => t.logProb !== null).length;
  lines.push(
    n > 0
      ? `sum ${r.sumLogProb.toFixed(4)} over ${n} scored token${n === 1 ? '' : 's'}, mean ${r.meanLogProb!.toFixed(4)}, perplexity ${r.perplexity!.toFixed(3)} (${r.backend})`
      : `no token has a log-prob (a single token has no context) (${r.backend})`,
  );
  return `${lines.join('\n')}\n`;
}

/** Where the commands write; tests pass their own. */
export interface CommandOutput {
  out: (text: string) => void;
  err: (text: string) => void;
}

function number(value: string | undefined, flag: string, check: (n: number) => boolean, what: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !check(n)) throw new EngineError('ENGINE_INVALID_OPTIONS', `${flag} must be ${what}, got ${JSON.stringify(value)}`, flag);
  return n;
}

function backendOption(value: string | undefined): BackendName | undefined {
  if (value === undefined) return undefined;
  if (value !== 'tensorflow' && value !== 'wasm' && value !== 'cpu')
    throw new EngineError('ENGINE_INVALID_OPTIONS', `--backend must be tensorflow, wasm or cpu, got ${JSON.stringify(value)}`, '--backend');
  return value;
}

/**
 * Adds `model info`, `model sample` and `model score` to a commander program. Engine errors print as
 * `opentinker: <message>` with exit code 1 (no stack trace). `resolveDir` turns what the user typed
 * into a model folder first (the host resolves `hf:Org/Name` through its Hub cache there).
 *
 * @example
 * ```ts
 * const program = new Command('opentinker');
 * registerModelCommands(program);
 * await program.parseAsync(process.argv);
 * ```
 */
export function registerModelCommands(
  program: Command,
  output: CommandOutput = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
  resolveDir: (dir: string) => Promise<string> = (dir) => Promise.resolve(dir),
): Command {
  const run =
    <A extends unknown[]>(fn: (...args: A) => Promise<void>) =>
    async (...args: A) => {
      const notice = engineNotice();
      if (notice) output.err(`${notice}\n`);
      try {
        await fn(...args);
      } catch (e) {
        if (!isEngineError(e)) throw e;
        output.err(`opentinker: ${e.message}\n`);
        process.exitCode = 1;
      }
    };
  const json = (value: unknown) => output.out(`${JSON.stringify(value, null, 2)}\n`);

  const model = program.command('model').description('Inspect, sample from and score Hugging Face model folders (config.json + safetensors + tokenizer.json)');
  model
    .command('info')
    .description('Architecture, parameter count, dtype, vocabulary, special tokens, chat template (reads no weights)')
    .argument('<dir>', 'model folder (or hf:Org/Name[@revision] where the host resolves it)')
    .option('--json', 'print JSON')
    .action(
      run(async (dir: string, opts: { json?: boolean }) => {
        const report = await modelInfo(await resolveDir(dir));
        if (opts.json) json(report);
        else output.out(formatModelInfo(report));
      }),
    );
  model
    .command('sample')
    .description('Sample a continuation of a prompt (ends at an EOS id, a --stop string, or --max-new-tokens)')
    .argument('<dir>', 'model folder (or hf:Org/Name[@revision] where the host resolves it)')
    .requiredOption('--prompt <text>', 'the prompt (a user message with --chat)')
    .option('--max-new-tokens <n>', 'most tokens to generate', '64')
    .option('--temperature <t>', '0 = greedy', '1')
    .option('--top-p <p>', 'nucleus sampling mass', '1')
    .option('--top-k <k>', '0 = off', '0')
    .option('--seed <n>', 'seed of the draws', '0')
    .option('--chat', "render the prompt as a user turn with the folder's chat template")
    .option('--system <text>', 'system message (with --chat)')
    .option('--stop <text...>', 'stop strings')
    .option('--backend <name>', 'tensorflow, wasm or cpu (default: the fastest that starts)')
    .option('--adapter <dir>', 'a PEFT LoRA adapter folder to apply')
    .option('--json', 'print JSON with tokens and log-probs')
    .action(
      run(async (dir: string, opts: Record<string, string | boolean | string[] | undefined>) => {
        const report = await modelSample(await resolveDir(dir), {
          prompt: opts.prompt as string,
          maxNewTokens: number(opts.maxNewTokens as string, '--max-new-tokens', (n) => Number.isInteger(n) && n > 0, 'a positive integer'),
          temperature: number(opts.temperature as string, '--temperature', (n) => n >= 0, 'a number >= 0'),
          topP: number(opts.topP as string, '--top-p', (n) => n > 0 && n <= 1, 'in (0, 1]'),
          topK: number(opts.topK as string, '--top-k', (n) => Number.isInteger(n) && n >= 0, 'a non-negative integer'),
          seed: number(opts.seed as string, '--seed', Number.isInteger, 'an integer'),
          chat: opts.chat === true,
          system: opts.system as string | undefined,
          stop: opts.stop as string[] | undefined,
          backend: backendOption(opts.backend as string | undefined),
          adapter: opts.adapter as string | undefined,
        });
        if (opts.json) json(report);
        else output.out(`${report.text}\n`);
        if (!opts.json)
          output.err(
            `[${report.tokens.length} tokens, finish: ${report.finishReason}${report.stop !== null ? ` at ${JSON.stringify(report.stop)}` : ''}, backend ${report.backend}]\n`,
          );
      }),
    );
  model
    .command('score')
    .description('Print each token of a text and its log-prob under the model')
    .argument('<dir>', 'model folder (or hf:Org/Name[@revision] where the host resolves it)')
    .requiredOption('--text <text>', 'the text to score (special tokens such as <|im_start|> are recognised)')
    .option('--add-special-tokens', "add the tokenizer's BOS/EOS as its post-processor would")
    .option('--backend <name>', 'tensorflow, wasm or cpu (default: the fastest that starts)')
    .option('--adapter <dir>', 'a PEFT LoRA adapter folder to apply')
    .option('--json', 'print JSON')
    .action(
      run(async (dir: string, opts: { text: string; addSpecialTokens?: boolean; backend?: string; adapter?: string; json?: boolean }) => {
        const report = await modelScore(await resolveDir(dir), {
          text: opts.text,
          addSpecialTokens: opts.addSpecialTokens === true,
          backend: backendOption(opts.backend),
          ...(opts.adapter ? { adapter: opts.adapter } : {}),
        });
        if (opts.json) json(report);
        else output.out(formatModelScore(report));
      }),
    );
  return model;
}
