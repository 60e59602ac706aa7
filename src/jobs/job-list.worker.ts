/**
 * The list reader thread's entry (see `JobListReader`): answers job-list pages, as JSON bodies, from
 * its own read connection, so that reading rows and writing JSON — most of a list request's cost — run
 * on the second core instead of the API's event loop. The thread keeps the JSON of the jobs it has
 * listed while their rows are unchanged (`JobPageWriter`).
 */
import Database from 'better-sqlite3';
import { Pool } from 'pg';
import { parentPort, workerData } from 'node:worker_threads';
import { JobListSql, type JobListQuery } from './job-list.sql';
import { BatchedPort } from './batched-port';
import { JobPageWriter } from './job-page.writer';

/** Where the thread reads from: the API's SQLite file, or its PostgreSQL database. */
export type ListReaderSource = { sqliteFile: string } | { postgresUrl: string };
export interface ListRequest {
  id: number;
  query: JobListQuery;
  page: number;
  limit: number;
}
/**
 * The body as UTF-8 bytes: its buffer (its own, see `joinJobPage`) is transferred, where a string would be
 * copied (a quarter of the thread's time). Requests and replies travel in arrays (`BatchedPort`).
 */
export type ListReply = { id: number; body: Uint8Array } | { id: number; error: string };

/** Connections the thread keeps to PostgreSQL: requests overlap while pg parses replies. */
const PG_CONNECTIONS = 4;

function open(source: ListReaderSource): JobPageWriter {
  if ('postgresUrl' in source) {
    const pool = new Pool({ connectionString: source.postgresUrl, max: PG_CONNECTIONS });
    // An idle connection that drops is replaced on the next query; without a listener it would kill the thread.
    pool.on('error', () => undefined);
    return new JobPageWriter(new JobListSql({ pg: pool }));
  }
  // Read-only: this connection can never write; WAL lets it read while the API writes.
  const db = new Database(source.sqliteFile, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  return new JobPageWriter(new JobListSql({ sqlite: db }));
}

if (parentPort) {
  const writer = open(workerData as ListReaderSource);
  const replies = new BatchedPort<ListReply>(parentPort);
  parentPort.on('message', (requests: ListRequest[]) => {
    for (const m of requests) {
      writer.page(m.query, m.page, m.limit).then(
        (body) => replies.send({ id: m.id, body }, body.buffer as ArrayBuffer),
        (e: unknown) => replies.send({ id: m.id, error: e instanceof Error ? e.message : String(e) }),
      );
    }
  });
}
