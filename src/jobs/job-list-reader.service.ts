import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { BatchedPort } from './batched-port';
import type { JobListQuery } from './job-list.sql';
import type { ListReaderSource, ListReply, ListRequest } from './job-list.worker';
import { serializeJobPage } from './job-page.serializer';
import { JobsRepository } from './jobs.repository';

/** Unexpected thread exits replaced by a new thread; after that, an exiting thread is not replaced. */
const MAX_RESTARTS = 3;

interface Pending {
  resolve(body: Buffer): void;
  reject(error: Error): void;
}

/**
 * Writes `GET /v1/jobs` pages (JSON bodies) on a worker thread with its own read connection. The list is
 * the busiest read route and most of its cost is reading 50 rows and writing 24 KB of JSON; on the API's
 * event loop that took the whole of one core at ~1,600–1,900 req/s on the 2-core machine while the other
 * core idled. A read on the thread sees every write the API has committed (SQLite WAL or PostgreSQL read
 * committed), so a job is listed as soon as its submission is answered.
 *
 * Any failure of the thread (it cannot start, it crashes, a read fails) falls back to reading on the API
 * thread with the same SQL and serialiser, so the answer never depends on the thread.
 * `list_reader_threads` sets how many threads (0: none, the API thread reads).
 */
@Injectable()
export class JobListReader implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(JobListReader.name);
  private readonly threads: ReaderThread[] = [];
  private nextId = 1;
  private restarts = 0;
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    const count = this.config.values.list_reader_threads;
    if (count === 0) return;
    // The compiled thread entry in the server package (the thread runs it also when tests run the sources).
    const entry = this.config.install.listReaderEntry;
    if (!existsSync(entry)) {
      this.logger.warn(`Job lists are read on the API thread: ${entry} is missing (run npm run build)`);
      return;
    }
    for (let i = 0; i < count; i++) this.start(entry);
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  /** Reader threads running now (0: pages are written on the API thread). */
  get threadCount(): number {
    return this.threads.length;
  }

  /** The JSON body (UTF-8) of one page of summaries, newest first, with the total. */
  async page(query: JobListQuery, page: number, limit: number): Promise<Buffer> {
    // The least busy thread: pages cost about the same, so this balances the work.
    const thread = this.threads.reduce<ReaderThread | undefined>((best, t) => (best === undefined || t.pending.size < best.pending.size ? t : best), undefined);
    if (thread) {
      try {
        return await this.ask(thread, { id: this.nextId++, query, page, limit });
      } catch (error) {
        this.logger.warn(`Job list read on the API thread: the reader thread failed (${(error as Error).message})`);
      }
    }
    const { items, total } = await this.jobs.list(query);
    return Buffer.from(serializeJobPage({ items, total, page, limit }));
  }

  private ask(thread: ReaderThread, request: ListRequest): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      thread.pending.set(request.id, { resolve, reject });
      thread.requests.send(request);
    });
  }

  private start(entry: string): void {
    // The database the API's own connection has open, whichever configuration named it.
    const options = this.dataSource.options as { type: string; url?: string; database?: string };
    const source: ListReaderSource = options.type === 'postgres' ? { postgresUrl: options.url! } : { sqliteFile: options.database! };
    const worker = new Worker(entry, { workerData: source });
    const thread: ReaderThread = { worker, requests: new BatchedPort(worker), pending: new Map() };
    worker.on('message', (replies: ListReply[]) => {
      for (const m of replies) {
        const p = thread.pending.get(m.id);
        if (!p) continue;
        thread.pending.delete(m.id);
        if ('body' in m) p.resolve(Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength));
        else p.reject(new Error(m.error));
      }
    });
    thread.worker.on('error', (error) => this.logger.error(`Job list reader thread failed: ${error.message}`));
    thread.worker.on('exit', (code) => {
      const at = this.threads.indexOf(thread);
      if (at >= 0) this.threads.splice(at, 1);
      for (const p of thread.pending.values()) p.reject(new Error(`the reader thread exited (code ${code})`));
      thread.pending.clear();
      if (this.closing) return;
      if (this.restarts++ < MAX_RESTARTS) this.start(entry);
      else this.logger.error(`A job list reader thread exited for good (${this.restarts} exits); ${this.threads.length} left`);
    });
    this.threads.push(thread);
  }
}

interface ReaderThread {
  worker: Worker;
  requests: BatchedPort<ListRequest>;
  pending: Map<number, Pending>;
}
