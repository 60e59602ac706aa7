import type { EngineSettings } from '@opentinker/engine/settings';
import { AppError, ErrorCode } from '../core/app-error';
import { parseIpcMessage } from '../core/ipc-message';
import { ManagedProcess } from '../core/managed-process';
import type { DeviceIds } from '../jobs/job.entity';
import { cpuThreads, cudaVisibleDevices, type Evictable } from '../scheduler/device-pool';
import type { TokenLogprob } from '../rollout/sampling-schemas';
import { FromModelServer, type ModelRequest, type ModelResult, type ToModelServer } from './model-protocol';

export interface ModelPoolOptions {
  /** The model server entry (`dist/serving/model-server.main.js`). */
  entry: string;
  /** Most models loaded at once; the least recently used one is stopped to make room. */
  maxModels: number;
  /** A model unused this long is stopped. */
  idleMs: number;
  /** Longest a load may take before the process is killed. */
  loadTimeoutMs: number;
  /** Longest one request may take; sampling cannot be interrupted, so the process is killed. */
  requestTimeoutMs: number;
  /** Sent to each model server with the folder to load. */
  home: string;
  jobsDir: string;
  /** Folders a model server may load a model from (jobs' checkpoints, this machine's Hub cache), links followed. */
  modelRoots: string[];
  /** The engine settings each model server starts its engine with (default: the engine's own defaults). */
  engine?: EngineSettings;
  /** Diagnostics (process start and exit, its stderr). */
  log?: (line: string) => void;
  /**
   * The devices a model server runs on, from the pool the worker's jobs take theirs from (see
   * `DevicePoolService`): taken before the process starts, given back when it has exited. Without it a
   * model server holds no devices.
   */
  devices?: ModelDevices;
}

/** Where model servers take their devices. */
export interface ModelDevices {
  /**
   * Waits for the devices of one model server (rejects with the reason when none frees up in `timeoutMs`).
   * The pool may evict `server` while it is idle, for a queued job.
   */
  acquire(timeoutMs: number, server: Evictable): Promise<DeviceIds>;
  release(ids: DeviceIds): void;
}

export type DeltaHandler = (index: number, text: string, logprobs: TokenLogprob[] | null) => void;

interface Pending {
  resolve(result: ModelResult): void;
  reject(error: Error): void;
  onDelta?: DeltaHandler;
  timer: NodeJS.Timeout;
}

const STDERR_KEEP = 4000;
/** Orders uses: two within one millisecond still rank. */
let useCounter = 0;
const KILL_GRACE_MS = 2000;

/** One child process holding one checkpoint; requests run one at a time, in arrival order. */
class ModelProcess implements Evictable {
  readonly ready: Promise<void>;
  lastUsed = ++useCounter;
  /** Requests accepted and not yet answered (queued or running). */
  inFlight = 0;
  exited = false;
  /** Asked to exit: takes no new requests (a request arriving now starts a fresh process). */
  stopping = false;
  /** Has loaded its checkpoint. */
  private loaded = false;
  private process: ManagedProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private stderr = '';
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly gone: Promise<void>;
  private markGone!: () => void;

  constructor(
    readonly dir: string,
    private readonly opts: ModelPoolOptions,
    private readonly onGone: (p: ModelProcess) => void,
  ) {
    this.gone = new Promise((resolve) => (this.markGone = resolve));
    this.ready = this.start();
    // A failed load is reported to the request that waits for it; nobody else needs to hear about it.
    this.ready.catch(() => undefined);
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Takes the devices (waiting within the load time), starts the process and waits until it has loaded. */
  private async start(): Promise<void> {
    const deadline = Date.now() + this.opts.loadTimeoutMs;
    let devices: DeviceIds = [];
    try {
      if (this.opts.devices) devices = await this.opts.devices.acquire(this.opts.loadTimeoutMs, this);
    } catch (error) {
      this.ended();
      throw new AppError(ErrorCode.MODEL_UNAVAILABLE, `The model ${this.dir} cannot start now: ${(error as Error).message}`, { field: 'model', retryAfter: 5 });
    }
    if (this.stopping) {
      this.opts.devices?.release(devices);
      this.ended();
      throw new AppError(ErrorCode.MODEL_UNAVAILABLE, 'The server is shutting down', { field: 'model' });
    }
    const env: NodeJS.ProcessEnv = { ...process.env, CUDA_VISIBLE_DEVICES: cudaVisibleDevices(devices) };
    if (this.opts.devices && !this.opts.engine) env.OPENTINKER_ENGINE_THREADS ??= String(cpuThreads(devices));
    const proc = (this.process = new ManagedProcess({
      entry: this.opts.entry,
      env,
      onStderr: (chunk) => {
        this.stderr = (this.stderr + chunk).slice(-STDERR_KEEP);
        for (const line of chunk.split('\n')) if (line.trim()) this.opts.log?.(`model ${this.dir}: ${line}`);
      },
    }));
    let loaded!: { resolve(): void; reject(e: Error): void };
    const ready = new Promise<void>((resolve, reject) => (loaded = { resolve, reject }));
    const loadTimer = setTimeout(
      () => {
        loaded.reject(
          new AppError(ErrorCode.MODEL_UNAVAILABLE, `Loading the model ${this.dir} took longer than ${this.opts.loadTimeoutMs / 1000} s`, { field: 'model', retryAfter: 5 }),
        );
        this.kill();
      },
      Math.max(0, deadline - Date.now()),
    );
    /** Everything waiting on this process fails with `error`. */
    const failAll = (error: AppError) => {
      clearTimeout(loadTimer);
      loaded.reject(error);
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(error);
      }
      this.pending.clear();
    };
    proc.child.on('message', (raw: unknown) => {
      let m: FromModelServer;
      try {
        m = parseIpcMessage(FromModelServer, raw, `The model server for ${this.dir}`);
      } catch (error) {
        // Our own child, so a bug: everything waiting on it fails with the reason, and it is stopped.
        failAll(new AppError(ErrorCode.INTERNAL, `${(error as Error).message}; it was stopped`));
        this.kill();
        return;
      }
      if (m.type === 'ready') {
        clearTimeout(loadTimer);
        this.loaded = true;
        this.opts.log?.(`model ${this.dir}: loaded (${m.source}, context ${m.contextLength}) in process ${proc.pid}${devices.length ? ` on ${devices.join(', ')}` : ''}`);
        loaded.resolve();
      } else if (m.type === 'load_failed') {
        clearTimeout(loadTimer);
        loaded.reject(new AppError(ErrorCode.MODEL_LOAD_FAILED, `The checkpoint cannot be served: ${m.message}`, { field: 'model' }));
        this.kill();
      } else if (m.type === 'delta') {
        this.pending.get(m.id)?.onDelta?.(m.index, m.text, m.logprobs);
      } else if (m.type === 'result' || m.type === 'error') {
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        clearTimeout(p.timer);
        if (m.type === 'result') p.resolve(m.result);
        else if (m.kind === 'context_length') p.reject(new AppError(ErrorCode.CONTEXT_LENGTH_EXCEEDED, m.message, { field: m.field ?? 'messages' }));
        else if (m.kind === 'invalid') p.reject(new AppError(ErrorCode.VALIDATION, m.message, { field: m.field }));
        else p.reject(new AppError(ErrorCode.INTERNAL, `The model failed: ${m.message}`));
      }
    });
    void proc.exited.then(({ code, signal }) => {
      this.opts.devices?.release(devices);
      const how = signal ? `signal ${signal}` : `code ${code}`;
      const tail = this.stderr.trim().split('\n').slice(-3).join(' | ');
      failAll(
        new AppError(ErrorCode.MODEL_UNAVAILABLE, `The model process for ${this.dir} exited (${how})${tail ? `: ${tail}` : ''}; the next request starts it again`, {
          field: 'model',
          retryAfter: 1,
        }),
      );
      this.ended();
    });
    // A model server's engine runs as many threads as the CPU slots it holds, unless the settings name a count.
    const engine: EngineSettings | undefined =
      this.opts.devices && this.opts.engine ? { ...this.opts.engine, engine_threads: this.opts.engine.engine_threads ?? cpuThreads(devices) } : this.opts.engine;
    this.post({ type: 'load', dir: this.dir, jobsDir: this.opts.jobsDir, modelRoots: this.opts.modelRoots, home: this.opts.home, engine });
    await ready;
  }

  private ended(): void {
    this.exited = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.markGone();
    this.onGone(this);
  }

  /** Queues a request behind the ones already accepted. */
  run(request: ModelRequest, onDelta?: DeltaHandler): Promise<ModelResult> {
    this.inFlight++;
    this.lastUsed = ++useCounter;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const result = this.queue.then(async () => {
      await this.ready;
      return this.send(request, onDelta);
    });
    this.queue = result.catch(() => undefined);
    return result.finally(() => {
      this.inFlight--;
      this.lastUsed = ++useCounter;
      if (this.inFlight === 0 && !this.exited) this.idleTimer = setTimeout(() => void this.stop(), this.opts.idleMs).unref();
    });
  }

  private send(request: ModelRequest, onDelta?: DeltaHandler): Promise<ModelResult> {
    if (this.exited) return Promise.reject(new AppError(ErrorCode.MODEL_UNAVAILABLE, `The model process for ${this.dir} has stopped`, { field: 'model', retryAfter: 1 }));
    const id = this.nextId++;
    return new Promise<ModelResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError(ErrorCode.MODEL_UNAVAILABLE, `The model took longer than ${this.opts.requestTimeoutMs / 1000} s; its process was stopped`, { field: 'model' }));
        this.kill();
      }, this.opts.requestTimeoutMs);
      this.pending.set(id, { resolve, reject, onDelta, timer });
      this.post({ type: 'generate', id, request });
    });
  }

  private post(message: ToModelServer): void {
    if (!this.exited) this.process?.send(message);
  }

  /** Loaded and answering nothing: a queued job may evict it ({@link Evictable}). */
  get idle(): boolean {
    return this.loaded && this.inFlight === 0 && !this.stopping && !this.exited;
  }

  /** Stops an idle process for a job that needs its devices; resolves once they are given back. */
  async evict(): Promise<void> {
    this.opts.log?.(`model ${this.dir}: evicted for a queued job`);
    await this.stop();
  }

  /** Stops once the requests already accepted are answered. */
  async retire(): Promise<void> {
    await this.queue;
    await this.stop();
  }

  /** Stops the process (SIGTERM to its group, SIGKILL after a grace period); resolves once it is gone. */
  async stop(): Promise<void> {
    this.stopping = true;
    // Not started yet (waiting for devices): `start` sees `stopping` and gives up.
    void this.process?.stop(KILL_GRACE_MS);
    await this.gone;
  }

  /** Kills the process group at once (sampling cannot be interrupted). */
  kill(): void {
    this.stopping = true;
    void this.process?.stop(0);
  }
}

/**
 * Model server child processes, one per checkpoint, at most `maxModels` at once. A request for a
 * checkpoint that is not loaded starts a process (the least recently used one is retired when the pool
 * is full, after its accepted requests); each process answers one request at a time; a crashed process
 * fails the requests it held with `OT_ERR_MODEL_UNAVAILABLE` (503) and is started again by the next
 * request; an idle one is stopped after `idleMs`.
 *
 * @example
 * ```ts
 * const pool = new ModelPool({ entry: 'dist/serving/model-server.main.js', maxModels: 2, idleMs: 600_000, ... });
 * const result = await pool.generate('/data/jobs/<id>/work/checkpoints/step-3/model', request, (i, text) => process.stdout.write(text));
 * await pool.close();
 * ```
 */
export class ModelPool {
  private readonly models = new Map<string, ModelProcess>();
  private readonly retiring = new Set<ModelProcess>();
  private closed = false;

  constructor(private readonly opts: ModelPoolOptions) {}

  /** Folders loaded now, least recently used first. */
  loaded(): string[] {
    return [...this.models.values()].sort((a, b) => a.lastUsed - b.lastUsed).map((p) => p.dir);
  }

  /** Process ids by folder (for diagnostics and tests). */
  pids(): Map<string, number | undefined> {
    return new Map([...this.models].map(([dir, p]) => [dir, p.pid]));
  }

  generate<R extends ModelRequest>(dir: string, request: R, onDelta?: DeltaHandler): Promise<ModelResult<R>> {
    if (this.closed) return Promise.reject(new AppError(ErrorCode.MODEL_UNAVAILABLE, 'The server is shutting down', { field: 'model' }));
    return this.processFor(dir).run(request, onDelta) as Promise<ModelResult<R>>;
  }

  /** Starts (or finds) the model's process and waits until it has loaded; rejects as a request would. */
  async load(dir: string): Promise<void> {
    if (this.closed) throw new AppError(ErrorCode.MODEL_UNAVAILABLE, 'The server is shutting down', { field: 'model' });
    await this.processFor(dir).ready;
  }

  private processFor(dir: string): ModelProcess {
    const existing = this.models.get(dir);
    if (existing && !existing.exited && !existing.stopping) return existing;
    // An idle process on its way out is left to exit; a fresh one takes its place.
    if (existing) this.models.delete(dir);
    while (this.models.size >= this.opts.maxModels) {
      const lru = [...this.models.values()].sort((a, b) => a.inFlight - b.inFlight || a.lastUsed - b.lastUsed)[0];
      this.models.delete(lru.dir);
      this.retiring.add(lru);
      this.opts.log?.(`model ${lru.dir}: evicted (pool holds ${this.opts.maxModels})`);
      void lru.retire().finally(() => this.retiring.delete(lru));
    }
    const created = new ModelProcess(dir, this.opts, (gone) => {
      if (this.models.get(gone.dir) === gone) this.models.delete(gone.dir);
    });
    this.models.set(dir, created);
    return created;
  }

  /** Stops every model process (requests still running fail with 503). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.models.values(), ...this.retiring];
    this.models.clear();
    await Promise.all(all.map((p) => p.stop()));
  }
}
