/**
 * The `tinker` job kind's runner: one Tinker SDK session on one base model. It loads the base once
 * (frozen) and answers the requests the `/api/v1` routes record, which the worker hands over as they
 * come: each training client's in `seq_id` order, different clients and samplers in turns. It runs
 * until the session finishes or expires (a `close` request) or the job is cancelled.
 */
import { datumBatch, isEngineError, loadLoraAdapter, readOptimizerState, saveLoraAdapter, StopStringScanner, writeOptimizerState, type AdapterSnapshot } from '@opentinker/engine';
import { isRlError, resolveTinkerLossConfig, tinkerLoss } from '@opentinker/rl';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OPTIMIZER_FILE, TINKER_META_FILE, tinkerCheckpointDir, type CheckpointRef, type TinkerCheckpointMeta } from '../../rollout/tinker-checkpoint-files';
import type { TinkerSpec } from './tinker.kind';
import { parseIpcMessage } from '../../core/ipc-message';
import { isTurnRequest, TinkerRequest, userError, type TinkerOpArgs, type TinkerResults } from './tinker-ops';
import type { RunContext } from '../../runner/run-context';
import { USER_ERROR_PREFIX, type CallMessage } from '../../runner/runner-protocol';
import { loadPolicy, type Policy } from '../../rollout/policy';
import { AdapterHost, type AdapterSpec } from './adapter-host';
import { RequestLane } from './request-lanes';

export async function runTinker(ctx: RunContext<TinkerSpec>): Promise<void> {
  const policy = await loadPolicy(ctx.spec.model, ctx, { trainable: false });
  const host = new AdapterHost(policy.model);
  try {
    await new TinkerRunner(ctx, policy, host).serve();
  } finally {
    host.dispose();
    policy.dispose();
  }
}

/** A relayed call: its number and the request, parsed on receipt. */
type TinkerCall = TinkerRequest & { id: number };
type SampleCall = Extract<TinkerCall, { op: 'sample' }>;

/** A request waiting for its turn. */
interface Pending {
  seq: number;
  call: TinkerCall;
}

interface Client {
  lane: RequestLane<Pending>;
  /** Why the client does not exist, when its creation failed. */
  failed: string | null;
  /** The sampler snapshots taken of it, oldest first. */
  snapshots: string[];
}

interface Sampler {
  snapshot: AdapterSnapshot | null;
  /** The training client it was taken of (unnamed snapshots). */
  model: string | null;
}

/** How long the runner waits for a request when it has nothing to do (it wakes for each one anyway). */
const IDLE_MS = 60_000;
/** Progress lines at most this often. */
const PROGRESS_MS = 1_000;

class TinkerRunner {
  private readonly clients = new Map<string, Client>();
  private readonly samplers = new Map<string, Sampler>();
  /** Samplers whose snapshot was let go, and why (a later sample on one says so). */
  private readonly released = new Map<string, string>();
  /** Creations first, then the training clients' turns and the samples, in rotation. */
  private readonly setup: TinkerCall[] = [];
  private readonly samples: SampleCall[] = [];
  private rotation = 0;
  private answered = 0;
  private lastProgress = 0;
  private readonly baseName: string;

  constructor(
    private readonly ctx: RunContext<TinkerSpec>,
    private readonly policy: Policy,
    private readonly host: AdapterHost,
  ) {
    this.baseName = peftBaseName(ctx.spec);
  }

  async serve(): Promise<void> {
    const { ctx } = this;
    ctx.log(`tinker session ${ctx.spec.session_id} on ${ctx.spec.base_model}: ready`);
    ctx.progress(0, null, 'ready');
    for (;;) {
      if (ctx.signal.aborted) return;
      // Everything that has arrived joins its queue before the next piece of work is chosen.
      for (let call = await ctx.calls.next(0); call; call = await ctx.calls.next(0)) if (this.accept(call)) return;
      const work = this.nextWork(Date.now());
      if (work) {
        if (work.op === 'sample') await this.answerSamples([work, ...this.takeAlike(work)]);
        else await this.answer(work);
        continue;
      }
      const call = await ctx.calls.next(this.idleWait(Date.now()));
      if (call && this.accept(call)) return;
    }
  }

  /**
   * Queues a request; true when it is the session's end (everything left has been failed). A call that
   * does not fit the protocol fails on its own, naming the field.
   */
  private accept(message: CallMessage): boolean {
    let call: TinkerCall;
    try {
      call = { id: message.id, ...parseIpcMessage(TinkerRequest, { op: message.op, args: message.args }, 'the Tinker API') };
    } catch (error) {
      this.fail(message.id, error);
      return false;
    }
    if (call.op === 'close') {
      const { reason } = call.args;
      this.failAll(`The Tinker session ended (${reason}) before this request ran`);
      this.ctx.calls.reply(call.id, { result: {} });
      this.ctx.log(`session ended: ${reason}`);
      return true;
    }
    if (call.op === 'create_model' || call.op === 'create_from_checkpoint') this.setup.push(call);
    else if (call.op === 'sample') this.samples.push(call);
    else if (isTurnRequest(call)) {
      const { model, seq_id } = call.args;
      const added = this.client(model).lane.add({ seq: seq_id, call }, Date.now());
      if (added === 'late')
        this.fail(call.id, userError(`seq_id ${seq_id} arrived after this training client's later requests ran (it waited ${this.ctx.spec.limits.seq_gap_seconds} s for it)`));
      else if (added === 'repeat') this.fail(call.id, userError(`seq_id ${seq_id} was already submitted`));
    }
    return false;
  }

  private client(key: string): Client {
    let c = this.clients.get(key);
    if (!c) this.clients.set(key, (c = { lane: new RequestLane(), failed: null, snapshots: [] }));
    return c;
  }

  /** The next request to run: creations first, then one turn each of the training clients and the samples. */
  private nextWork(now: number): TinkerCall | null {
    const setup = this.setup.shift();
    if (setup) return setup;
    const lanes = [...this.clients.entries()];
    const gapMs = this.ctx.spec.limits.seq_gap_seconds * 1000;
    const sources = lanes.length + 1;
    for (let i = 0; i < sources; i++) {
      const at = (this.rotation + i) % sources;
      if (at === lanes.length) {
        const call = this.samples.shift();
        if (!call) continue;
        this.rotation = at + 1;
        return call;
      }
      const [key, client] = lanes[at];
      const next = client.lane.take(now, gapMs);
      if (!next) continue;
      if (next.skipped.length > 0) this.ctx.log(`${key}: seq_id ${next.skipped.join(', ')} never arrived; went on with ${next.item.seq}`);
      this.rotation = at + 1;
      return next.item.call;
    }
    return null;
  }

  /** How long to wait for the next request: until a stalled lane gives up on its gap, else a while. */
  private idleWait(now: number): number {
    const gapMs = this.ctx.spec.limits.seq_gap_seconds * 1000;
    let until = now + IDLE_MS;
    for (const c of this.clients.values()) {
      const deadline = c.lane.gapDeadline(gapMs);
      if (deadline !== null) until = Math.min(until, deadline);
    }
    return Math.max(0, until - now);
  }

  private async answer(call: TinkerCall): Promise<void> {
    try {
      const result = await this.run(call);
      this.ctx.calls.reply(call.id, { result });
    } catch (error) {
      this.fail(call.id, error);
    }
    this.counted(1);
  }

  /** Counts answered requests, and says so on the job's progress line now and then. */
  private counted(requests: number): void {
    this.answered += requests;
    const now = Date.now();
    if (now - this.lastProgress >= PROGRESS_MS) {
      this.lastProgress = now;
      this.ctx.progress(this.answered, null, `${this.host.size} training client(s), ${this.samplers.size} sampler(s), ${this.answered} request(s) answered`);
    }
  }

  private fail(id: number, error: unknown): void {
    this.ctx.calls.reply(id, { error: errorText(error) });
  }

  private failAll(reason: string): void {
    for (const call of [...this.setup.splice(0), ...this.samples.splice(0)]) this.fail(call.id, new Error(reason));
    for (const c of this.clients.values()) for (const p of c.lane.drain()) this.fail(p.call.id, new Error(reason));
  }

  private async run(call: TinkerCall): Promise<unknown> {
    switch (call.op) {
      case 'create_model':
        return this.createModel(call.args);
      case 'create_from_checkpoint':
        return this.createFromCheckpoint(call.args);
      case 'load_weights':
        return this.loadWeights(call.args);
      case 'forward_backward':
        return this.forwardBackward(call.args);
      case 'optim_step':
        return this.optimStep(call.args);
      case 'save':
        return this.save(call.args);
      case 'snapshot':
        return this.snapshot(call.args);
      case 'skip':
        throw userError(call.args.error);
      case 'sample':
      case 'close':
        throw new Error(`${call.op} is answered by the serve loop, not one at a time`);
    }
  }

  // --- training clients -------------------------------------------------------------------------

  private checkRoom(extraBytes: number, what: string): void {
    const limit = this.ctx.spec.limits.adapter_memory_mb * 1024 * 1024;
    const used = this.host.adapterBytes + this.snapshotBytes();
    if (used + extraBytes > limit) {
      throw userError(
        `${what} needs ${mb(extraBytes)} and this runner already holds ${mb(used)} of adapters, optimizer states and sampler snapshots, over its ${mb(limit)} (operator setting tinker_adapter_memory_mb); release samplers or finish training clients`,
      );
    }
  }

  private checkAdapterCount(): void {
    const max = this.ctx.spec.limits.max_adapters;
    if (this.host.size >= max)
      throw userError(`this runner already holds ${max} training clients on ${this.ctx.spec.base_model}, the most it may (operator setting tinker_max_adapters_per_base)`);
  }

  private createModel(a: TinkerOpArgs<'create_model'>): TinkerResults['create_model'] {
    const client = this.client(a.model);
    try {
      this.checkAdapterCount();
      const spec: AdapterSpec = {
        rank: a.lora.rank,
        seed: a.lora.seed ?? randomInt(2 ** 31),
        trainAttn: a.lora.train_attn,
        trainMlp: a.lora.train_mlp,
        trainUnembed: a.lora.train_unembed,
      };
      this.checkRoom(this.host.trainingBytes(spec), `a rank-${spec.rank} LoRA adapter with its optimizer state`);
      this.host.create(a.model, spec);
      this.ctx.log(`${a.model}: LoRA rank ${spec.rank} (${describeParts(spec)}), seed ${spec.seed}`);
      return { lora_rank: spec.rank };
    } catch (error) {
      client.failed = errorText(error).replace(USER_ERROR_PREFIX, '');
      throw error;
    }
  }

  private async createFromCheckpoint(a: TinkerOpArgs<'create_from_checkpoint'>): Promise<TinkerResults['create_from_checkpoint']> {
    const client = this.client(a.model);
    try {
      this.checkAdapterCount();
      const { adapter, meta, optimizer } = await this.readCheckpoint(a.checkpoint, a.optimizer);
      const spec = adapterSpecOf(meta);
      this.checkRoom(this.host.trainingBytes(spec), `the checkpoint's rank-${spec.rank} adapter with its optimizer state`);
      this.host.load(a.model, adapter, spec, optimizer);
      this.ctx.log(`${a.model}: loaded ${a.checkpoint.kind}/${a.checkpoint.name} of ${meta.model_id}${optimizer ? ' with its optimizer state' : ''}`);
      return { lora_rank: spec.rank };
    } catch (error) {
      client.failed = errorText(error).replace(USER_ERROR_PREFIX, '');
      throw error;
    }
  }

  private async loadWeights(a: TinkerOpArgs<'load_weights'>): Promise<TinkerResults['load_weights']> {
    this.requireClient(a.model);
    const { adapter, optimizer } = await this.readCheckpoint(a.checkpoint, a.optimizer);
    this.host.replace(a.model, adapter, optimizer);
    this.ctx.log(`${a.model}: loaded ${a.checkpoint.kind}/${a.checkpoint.name}${optimizer ? ' with its optimizer state' : ''}`);
    return {};
  }

  private requireClient(key: string): void {
    if (this.host.has(key)) return;
    const failed = this.clients.get(key)?.failed;
    throw userError(failed ? `this training client was not created: ${failed}` : `no training client ${key} in this session's runner`);
  }

  private forwardBackward(a: TinkerOpArgs<'forward_backward'>): TinkerResults['forward_backward'] {
    this.requireClient(a.model);
    const config = a.loss_fn_config;
    asUserError(() => resolveTinkerLossConfig(a.loss_fn, config));
    const context = this.host.config.max_position_embeddings;
    a.data.forEach((d, i) => {
      if (d.tokens.length + 1 > context) throw userError(`data[${i}]: ${d.tokens.length} input tokens, over this model's context of ${context - 1} (plus the last target)`);
    });
    const outputs: TinkerResults['forward_backward']['outputs'] = new Array(a.data.length);
    let lossSum = 0;
    const maxLen = Math.max(...a.data.map((d) => d.tokens.length + 1));
    const rows = a.forward_only ? a.data.length : Math.max(1, this.host.microBatchRows(a.model, maxLen, a.data.length));
    for (let start = 0; start < a.data.length; start += rows) {
      const part = a.data.slice(start, start + rows);
      const db = datumBatch(part.map((d) => ({ input: d.tokens, targets: d.inputs.target_tokens })));
      // Per datum: its targets' log-probs, the loss and its derivative, as token-aligned coefficients.
      const coefficients = (tokenLogprobs: Float32Array) =>
        db.tokenAligned(
          db.perDatum(tokenLogprobs).map((logProbs, j) => {
            const out = asUserError(() => tinkerLoss(a.loss_fn, { logProbs, inputs: part[j].inputs }, config), `data[${start + j}].`);
            lossSum += out.loss;
            outputs[start + j] = { logprobs: Array.from(logProbs), elementwise_loss: Array.from(out.elementwiseLoss) };
            return out.dLogProb;
          }),
        );
      if (a.forward_only) coefficients(this.host.score(a.model, db.batch));
      else this.host.accumulate(a.model, db.batch, ({ logProbs }) => ({ logProbCoef: coefficients(logProbs) }));
    }
    return { outputs, metrics: { 'loss:sum': lossSum } };
  }

  private optimStep(a: TinkerOpArgs<'optim_step'>): TinkerResults['optim_step'] {
    this.requireClient(a.model);
    const p = a.adam;
    const outcome = this.host.step(a.model, { lr: p.learning_rate, beta1: p.beta1, beta2: p.beta2, eps: p.eps, weightDecay: p.weight_decay, gradClipNorm: p.grad_clip_norm });
    if (!outcome) return { metrics: {} };
    const steps = this.host.steps(a.model);
    this.ctx.metrics(steps, { [`${a.model}/grad_norm`]: outcome.gradNorm, [`${a.model}/learning_rate`]: outcome.lr });
    return { metrics: { grad_norm: outcome.gradNorm, learning_rate: outcome.lr, ...(outcome.skipped ? { skipped: 1 } : {}) } };
  }

  private async save(a: TinkerOpArgs<'save'>): Promise<TinkerResults['save']> {
    this.requireClient(a.model);
    const ref: CheckpointRef = { job_id: this.ctx.jobId, model: a.model, kind: a.kind, name: a.name };
    const dir = tinkerCheckpointDir(this.ctx.paths.jobsDir, ref);
    if (existsSync(dir) && !a.overwrite) throw userError(`checkpoint ${a.kind}/${a.name} of ${a.model_id} already exists (save with overwrite to replace it)`);
    const tmp = `${dir}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    await saveLoraAdapter(tmp, this.host.exportAdapter(a.model, this.baseName), { modelConfig: this.host.config });
    if (a.kind === 'weights') await writeOptimizerState(join(tmp, OPTIMIZER_FILE), this.host.optimizerState(a.model));
    const spec = this.host.spec(a.model);
    const now = new Date();
    const meta: TinkerCheckpointMeta = {
      model_id: a.model_id,
      base_model: this.ctx.spec.base_model,
      base: this.ctx.spec.model.preset !== undefined ? { preset: this.ctx.spec.model.preset } : { path: this.ctx.spec.model.path! },
      base_dir: this.policy.dir,
      kind: a.kind,
      name: a.name,
      lora: { rank: spec.rank, seed: spec.seed, train_attn: spec.trainAttn, train_mlp: spec.trainMlp, train_unembed: spec.trainUnembed },
      steps: this.host.steps(a.model),
      created_at: now.toISOString(),
      expires_at: a.ttl_seconds === null ? null : new Date(now.getTime() + a.ttl_seconds * 1000).toISOString(),
      user_metadata: a.user_metadata,
    };
    await writeFile(join(tmp, TINKER_META_FILE), JSON.stringify(meta, null, 2) + '\n');
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    this.ctx.log(`${a.model}: saved ${a.kind}/${a.name}`);
    return {};
  }

  private async readCheckpoint(ref: CheckpointRef, withOptimizer: boolean) {
    const dir = tinkerCheckpointDir(this.ctx.paths.jobsDir, ref);
    const name = `${ref.kind}/${ref.name}`;
    let meta: TinkerCheckpointMeta;
    try {
      meta = JSON.parse(await readFile(join(dir, TINKER_META_FILE), 'utf8')) as TinkerCheckpointMeta;
    } catch {
      throw userError(`checkpoint ${name} is not there (deleted?)`);
    }
    if (withOptimizer && ref.kind !== 'weights') throw userError(`${name} is a sampler checkpoint, which holds no optimizer state: load a checkpoint saved with save_state`);
    const adapter = await loadLoraAdapter(dir, { modelConfig: this.host.config });
    const optimizer = withOptimizer ? await readOptimizerState(join(dir, OPTIMIZER_FILE)) : null;
    return { adapter, meta, optimizer };
  }

  // --- samplers ----------------------------------------------------------------------------------

  private snapshotBytes(): number {
    let n = 0;
    for (const s of this.samplers.values()) n += s.snapshot?.bytes ?? 0;
    return n;
  }

  private snapshot(a: TinkerOpArgs<'snapshot'>): TinkerResults['snapshot'] {
    this.requireClient(a.model);
    const snapshot = this.host.snapshot(a.model);
    try {
      this.checkRoom(snapshot.bytes, 'a sampler snapshot');
    } catch (error) {
      snapshot.dispose();
      throw error;
    }
    this.samplers.set(a.sampler, { snapshot, model: a.model });
    const client = this.client(a.model);
    client.snapshots.push(a.sampler);
    const keep = this.ctx.spec.limits.samplers_per_model;
    while (client.snapshots.length > keep) {
      const old = client.snapshots.shift()!;
      this.samplers.get(old)?.snapshot?.dispose();
      this.samplers.delete(old);
      this.released.set(
        old,
        `sampler ${old} was released: a training client keeps its ${keep} newest unnamed sampler snapshots (operator setting tinker_samplers_per_model); save_weights_for_sampler with a name keeps one`,
      );
    }
    return {};
  }

  private async samplerOf(a: TinkerOpArgs<'sample'>): Promise<Sampler> {
    const known = this.samplers.get(a.sampler);
    if (known) return known;
    const released = this.released.get(a.sampler);
    if (released) throw userError(released);
    if (a.source.type === 'snapshot') throw userError(`sampler ${a.sampler} has no snapshot in this runner`);
    let sampler: Sampler = { snapshot: null, model: null };
    if (a.source.type === 'checkpoint') {
      const { adapter } = await this.readCheckpoint(a.source.checkpoint, false);
      const snapshot = this.host.snapshotOf(adapter);
      try {
        this.checkRoom(snapshot.bytes, "the checkpoint's adapter");
      } catch (error) {
        snapshot.dispose();
        throw error;
      }
      sampler = { snapshot, model: null };
    }
    this.samplers.set(a.sampler, sampler);
    return sampler;
  }

  /** A sample request checked against the model and the limits, with its sampler and how many tokens it may draw. */
  private async prepareSample(a: TinkerOpArgs<'sample'>): Promise<PreparedSample> {
    const sampler = await this.samplerOf(a);
    const { contextLength } = this.policy;
    const room = contextLength - a.prompt.length;
    if (a.prompt.length === 0) throw userError('the prompt is empty');
    if (room < 1) throw userError(`the prompt (${a.prompt.length} tokens) fills this model's context of ${contextLength} tokens`);
    const cap = this.ctx.spec.limits.max_sample_tokens;
    if (a.max_tokens !== null && a.max_tokens > Math.min(room, cap)) {
      throw userError(
        a.max_tokens > room
          ? `max_tokens ${a.max_tokens} + ${a.prompt.length} prompt tokens exceed this model's context of ${contextLength}`
          : `max_tokens ${a.max_tokens} is over this server's limit of ${cap} (operator setting tinker_max_sample_tokens)`,
      );
    }
    return { a, sampler, maxNewTokens: a.max_tokens ?? Math.min(room, cap) };
  }

  /**
   * Sample requests that can share one engine pass with `first` (the same sampling settings, no seed of
   * their own), taken off the queue: a step of an RL loop sends one request per prompt, all alike, from
   * one or several samplers.
   */
  private takeAlike(first: SampleCall): SampleCall[] {
    const key = sampleBatchKey(first.args);
    if (key === null) return [];
    const taken: SampleCall[] = [];
    let rows = first.args.num_samples;
    for (let i = 0; i < this.samples.length && rows < MAX_SAMPLE_ROWS;) {
      const a = this.samples[i].args;
      if (sampleBatchKey(a) === key && rows + a.num_samples <= MAX_SAMPLE_ROWS) {
        taken.push(...this.samples.splice(i, 1));
        rows += a.num_samples;
      } else i++;
    }
    return taken;
  }

  /** Answers sample requests alike enough for one engine pass (see {@link takeAlike}); each is answered or failed on its own. */
  private async answerSamples(calls: SampleCall[]): Promise<void> {
    const ready: Array<{ call: SampleCall; p: PreparedSample }> = [];
    for (const call of calls) {
      try {
        ready.push({ call, p: await this.prepareSample(call.args) });
      } catch (error) {
        this.fail(call.id, error);
      }
    }
    if (ready.length > 0) {
      try {
        const results = this.sampleTogether(ready.map((r) => r.p));
        ready.forEach((r, i) => this.ctx.calls.reply(r.call.id, { result: results[i] }));
        if (ready.length > 1) this.ctx.log(`sampled ${ready.length} requests in one pass`);
      } catch (error) {
        for (const r of ready) this.fail(r.call.id, error);
      }
    }
    this.counted(calls.length);
  }

  /** One engine pass for requests of the same settings; each request's prompt with its own sampler's weights. */
  private sampleTogether(batch: PreparedSample[]): Array<TinkerResults['sample']> {
    const a = batch[0].a;
    const n = a.num_samples;
    const { tokenizer } = this.policy;
    const rows = batch.length * n;
    const scanners = Array.from({ length: rows }, () => new StopStringScanner(tokenizer, a.stop_strings));
    const scanned = new Array<number>(rows).fill(0);
    const vocabLimit = Math.min(tokenizer.vocabSize, this.host.config.vocab_size);
    const seqs = this.host.sample(
      batch.length === 1 ? batch[0].sampler.snapshot : batch.map((p) => p.sampler.snapshot),
      batch.map((p) => p.a.prompt),
      {
        maxNewTokens: Math.min(...batch.map((p) => p.maxNewTokens)),
        numSamples: n,
        temperature: a.temperature,
        topP: a.top_p,
        topK: a.top_k < 0 ? 0 : a.top_k,
        seed: a.seed ?? randomInt(2 ** 31),
        stopTokenIds: [...(a.stop_tokens ?? this.policy.stopTokenIds), ...a.extra_stop_tokens],
        vocabLimit,
        promptLogProbs: a.prompt_logprobs,
        ...(a.stop_strings.length > 0
          ? {
              stopCheck: (row: number, generated: readonly number[]) => {
                let match = null;
                while (scanned[row] < generated.length) match = scanners[row].push(generated[scanned[row]++]);
                return match !== null;
              },
            }
          : {}),
      },
    );
    return batch.map((p, i) => {
      const own = seqs.slice(i * n, (i + 1) * n);
      const sequences = own.map((seq, j) => {
        const match = scanners[i * n + j].match;
        const kept = match ? match.tokenCount : seq.tokens.length;
        return {
          tokens: seq.tokens.slice(0, kept),
          logprobs: seq.logProbs.slice(0, kept),
          stop_reason: match || seq.finishReason === 'stop' ? ('stop' as const) : ('length' as const),
        };
      });
      const result: TinkerResults['sample'] = { sequences };
      const prompt = own[0]?.promptLogProbs;
      if (p.a.prompt_logprobs && prompt) result.prompt_logprobs = Array.from(prompt, (v) => (Number.isNaN(v) ? null : v));
      if (p.a.topk_prompt_logprobs > 0) result.topk_prompt_logprobs = this.topkPromptLogprobs(p, vocabLimit);
      return result;
    });
  }

  /** `[prompt length, k]` most likely tokens at each prompt position; an empty cell is `(0, -99999)`, as the SDK reads it. */
  private topkPromptLogprobs(p: PreparedSample, vocabLimit: number): NonNullable<TinkerResults['sample']['topk_prompt_logprobs']> {
    const k = p.a.topk_prompt_logprobs;
    const scored = this.host.promptLogprobs(p.sampler.snapshot, p.a.prompt, k, vocabLimit);
    const ids: number[] = [];
    const lps: number[] = [];
    for (const row of scored.top) {
      for (let j = 0; j < k; j++) {
        const alt = row?.[j];
        ids.push(alt ? alt.id : 0);
        lps.push(alt ? alt.logProb : -99999);
      }
    }
    return { k, token_ids: ids, logprobs: lps };
  }
}

/** A sample request ready to run. */
interface PreparedSample {
  a: TinkerOpArgs<'sample'>;
  sampler: Sampler;
  maxNewTokens: number;
}

/** Most sequences one engine pass samples for several requests. */
const MAX_SAMPLE_ROWS = 256;

/**
 * What sample requests must share to be answered by one pass, or null for one that runs alone (its own
 * seed makes its draws its own, its token budget without max_tokens depends on its prompt, and its
 * prompt's top-k alternatives take a pass of their own anyway).
 */
function sampleBatchKey(a: TinkerOpArgs<'sample'>): string | null {
  if (a.seed !== null || a.max_tokens === null || a.topk_prompt_logprobs > 0) return null;
  return JSON.stringify([a.num_samples, a.max_tokens, a.temperature, a.top_k, a.top_p, a.stop_tokens, a.extra_stop_tokens, a.stop_strings, a.prompt_logprobs]);
}

/** `base_model_name_or_path` of the adapters this runner saves: the Hub id, the folder, or the preset. */
function peftBaseName(spec: TinkerSpec): string {
  const m = spec.model;
  if (m.preset !== undefined) return m.preset;
  return m.path!.startsWith('hf:') ? m.path!.slice(3).split('@')[0] : m.path!;
}

function adapterSpecOf(meta: TinkerCheckpointMeta): AdapterSpec {
  const l = meta.lora;
  return { rank: l.rank, seed: l.seed ?? 0, trainAttn: l.train_attn, trainMlp: l.train_mlp, trainUnembed: l.train_unembed };
}

function describeParts(spec: AdapterSpec): string {
  return [spec.trainAttn ? 'attention' : '', spec.trainMlp ? 'MLP' : '', spec.trainUnembed ? 'unembedding' : ''].filter(Boolean).join(', ');
}

function mb(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** Runs `fn`; the loss library's refusals of the request's values become the caller's mistakes (prefixed with `where`). */
function asUserError<T>(fn: () => T, where = ''): T {
  try {
    return fn();
  } catch (error) {
    if (isRlError(error)) throw userError(`${where}${error.field ? `${error.field}: ` : ''}${error.message}`);
    throw error;
  }
}

/** A failure as the call's error: the engine's refusals of the request's values are the caller's mistakes. */
function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith(USER_ERROR_PREFIX)) return message;
  if (isEngineError(error) && (error.code === 'ENGINE_INVALID_INPUT' || error.code === 'ENGINE_INVALID_OPTIONS' || error.code === 'ENGINE_OUT_OF_MEMORY')) {
    return USER_ERROR_PREFIX + message;
  }
  return message;
}
