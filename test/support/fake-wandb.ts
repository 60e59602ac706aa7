import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * A stand-in for a W&B server (none is reachable from tests), answering what the wandb SDK's sender
 * (wandb-core 0.28) and OpenTinker's stream ask:
 *
 * - `POST /graphql`, HTTP Basic `api:<key>`: `UpsertBucket` (creates or updates a run: config merged key
 *   by key, display name, tags, job type, host; answers the bucket with its project, entity and
 *   `historyLineCount`), `RunResumeStatus` (the run's line counts, history tail, summary and
 *   `wandbConfig`), `ServerFeaturesQuery`, `Viewer`, `ServerInfo`, `OrganizationCoreWeaveOrganizationID`
 *   and `CreateRunFiles` (upload URLs on this server); any other operation is a GraphQL error;
 * - `POST /files/<entity>/<project>/<run>/file_stream`: lines of `wandb-history.jsonl`, `wandb-summary.json`
 *   and `output.log` stored at their offsets (a line past the end is a recorded gap), `complete` and
 *   `exitcode` kept;
 * - `PUT /upload/<run>/<file>`: the uploaded files; `POST /sdk/otel/…`: accepted and ignored.
 *
 * Tests steer it: `key` (the API key it accepts; others get 401), `fail` (answer the next N requests of
 * a route with a status), `die()` (stop answering: the port refuses connections), and read `requests`
 * and `runs`.
 */
export interface FakeWandbRun {
  name: string;
  project: string;
  entity: string;
  /** The config as UpsertBucket sent it last, each key's value as sent (`{ value: … }`), merged over earlier calls. */
  config: Record<string, unknown>;
  displayName: string | null;
  tags: string[] | null;
  jobType: string | null;
  host: string | null;
  upserts: Array<Record<string, unknown>>;
  /** wandb-history.jsonl, wandb-summary.json and output.log as the file stream left them, line by line. */
  files: Record<string, string[]>;
  /** Offsets that left a gap (a line past the end of the file). */
  gaps: Array<{ file: string; offset: number; length: number }>;
  fileStream: Array<Record<string, unknown>>;
  uploads: Record<string, string>;
  complete: boolean;
  exitcode: number | null;
}

export interface FakeWandbRequest {
  method: string;
  path: string;
  /** The GraphQL operation, for `/graphql`. */
  operation: string | null;
  authorization: string | null;
  body: unknown;
  status: number;
}

export type FakeWandbRoute = 'graphql' | 'file_stream';

export interface FakeWandb {
  url: string;
  entity: string;
  key: string;
  requests: FakeWandbRequest[];
  runs: Map<string, FakeWandbRun>;
  /** The next `times` requests of `route` are answered `status` (after being recorded). */
  fail(route: FakeWandbRoute, status: number, times: number): void;
  /** Stops answering for good: open connections are cut, new ones refused. */
  die(): Promise<void>;
  close(): Promise<void>;
}

const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString('base64')}`;

export async function startFakeWandb(opts: { key: string; entity?: string }): Promise<FakeWandb> {
  const entity = opts.entity ?? 'fake-entity';
  const requests: FakeWandbRequest[] = [];
  const runs = new Map<string, FakeWandbRun>();
  const failures: Record<FakeWandbRoute, Array<number>> = { graphql: [], file_stream: [] };
  const sockets = new Set<Socket>();
  let url = '';

  const runOf = (name: string, project: string, runEntity: string): FakeWandbRun => {
    let run = runs.get(name);
    if (!run) {
      run = {
        name,
        project,
        entity: runEntity,
        config: {},
        displayName: null,
        tags: null,
        jobType: null,
        host: null,
        upserts: [],
        files: {},
        gaps: [],
        fileStream: [],
        uploads: {},
        complete: false,
        exitcode: null,
      };
      runs.set(name, run);
    }
    return run;
  };

  const bucketOf = (run: FakeWandbRun) => ({
    id: Buffer.from(`Run:${run.name}`).toString('base64'),
    name: run.name,
    displayName: run.displayName,
    description: null,
    config: JSON.stringify(run.config),
    sweepName: null,
    project: { id: 'project-1', name: run.project, entity: { id: 'entity-1', name: run.entity } },
    historyLineCount: (run.files['wandb-history.jsonl'] ?? []).length,
  });

  const graphql = (body: { query?: string; variables?: Record<string, unknown>; operationName?: string }): { data?: unknown; errors?: unknown[] } => {
    const operation = body.operationName ?? /(?:query|mutation)\s+(\w+)/.exec(body.query ?? '')?.[1];
    const v = body.variables ?? {};
    switch (operation) {
      case 'UpsertBucket': {
        const run = runOf(String(v.name), String(v.project ?? 'uncategorized'), typeof v.entity === 'string' ? v.entity : entity);
        run.upserts.push(v);
        if (typeof v.config === 'string') Object.assign(run.config, JSON.parse(v.config));
        if (typeof v.displayName === 'string') run.displayName = v.displayName;
        if (Array.isArray(v.tags)) run.tags = v.tags as string[];
        if (typeof v.jobType === 'string') run.jobType = v.jobType;
        if (typeof v.host === 'string') run.host = v.host;
        return { data: { upsertBucket: { bucket: bucketOf(run), inserted: run.upserts.length === 1 } } };
      }
      case 'RunResumeStatus': {
        const run = runs.get(String(v.name));
        const model = { id: 'project-1', name: v.project, entity: { id: 'entity-1', name: entity } };
        if (!run) return { data: { model: { ...model, bucket: null } } };
        const history = run.files['wandb-history.jsonl'] ?? [];
        const wandb = (run.config._wandb as { value?: Record<string, unknown> } | undefined)?.value ?? {};
        return {
          data: {
            model: {
              ...model,
              bucket: {
                id: bucketOf(run).id,
                name: run.name,
                summaryMetrics: run.files['wandb-summary.json']?.at(-1) ?? '{}',
                displayName: run.displayName,
                logLineCount: (run.files['output.log'] ?? []).length,
                historyLineCount: history.length,
                eventsLineCount: 0,
                historyTail: JSON.stringify(history.slice(-10)),
                eventsTail: '[]',
                config: JSON.stringify(run.config),
                tags: run.tags ?? [],
                notes: null,
                wandbConfig: JSON.stringify('t' in wandb ? { t: wandb.t } : {}),
              },
            },
          },
        };
      }
      case 'ServerFeaturesQuery':
        return { data: { serverInfo: { features: [] } } };
      case 'ServerInfo':
        return { data: { serverInfo: { cliVersionInfo: {}, latestLocalVersionInfo: null } } };
      case 'Viewer':
        return { data: { viewer: { id: 'viewer-1', entity, username: entity, email: null, flags: '{}', teams: { edges: [] } } } };
      case 'OrganizationCoreWeaveOrganizationID':
        return { data: { entity: { organization: null } } };
      case 'CreateRunFiles': {
        const files = (v.files as string[]) ?? [];
        return { data: { createRunFiles: { runID: String(v.run), uploadHeaders: [], files: files.map((name) => ({ name, uploadUrl: `${url}/upload/${v.run}/${name}` })) } } };
      }
      default:
        return { errors: [{ message: `the fake W&B server does not know ${operation}` }] };
    }
  };

  const fileStream = (run: FakeWandbRun, body: Record<string, unknown>) => {
    run.fileStream.push(body);
    for (const [file, chunk] of Object.entries((body.files ?? {}) as Record<string, { offset: number; content: string[] }>)) {
      const lines = (run.files[file] ??= []);
      if (chunk.offset > lines.length) run.gaps.push({ file, offset: chunk.offset, length: lines.length });
      chunk.content.forEach((line, i) => (lines[chunk.offset + i] = line));
    }
    if (body.complete === true) {
      run.complete = true;
      run.exitcode = typeof body.exitcode === 'number' ? body.exitcode : null;
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const path = (req.url ?? '/').split('?')[0];
    const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // kept as text
    }
    const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : null;
    const record: FakeWandbRequest = { method: req.method ?? 'GET', path, operation: null, authorization, body, status: 200 };
    requests.push(record);
    const answer = (status: number, json: unknown) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    if (path.startsWith('/sdk/otel/')) return answer(200, {});
    if (req.method === 'PUT' && path.startsWith('/upload/')) {
      const [, , runName, ...file] = path.split('/');
      runOf(runName, 'uncategorized', entity).uploads[decodeURIComponent(file.join('/'))] = text;
      return answer(200, {});
    }
    if (authorization !== basic(opts.key)) return answer(401, { errors: [{ message: 'user is not logged in' }] });
    if (req.method === 'POST' && path === '/graphql') {
      const q = body as { query?: string; operationName?: string };
      record.operation = q?.operationName ?? /(?:query|mutation)\s+(\w+)/.exec(q?.query ?? '')?.[1] ?? null;
      const failure = failures.graphql.shift();
      if (failure !== undefined) return answer(failure, { errors: [{ message: 'injected failure' }] });
      return answer(200, graphql(q ?? {}));
    }
    const stream = /^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/.exec(path);
    if (req.method === 'POST' && stream) {
      const failure = failures.file_stream.shift();
      if (failure !== undefined) return answer(failure, { error: 'injected failure' });
      const [, runEntity, project, name] = stream.map(decodeURIComponent);
      fileStream(runOf(name, project, runEntity), (body ?? {}) as Record<string, unknown>);
      return answer(200, { exitcode: null, limits: {} });
    }
    answer(404, { error: `no route ${req.method} ${path}` });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url,
    entity,
    key: opts.key,
    requests,
    runs,
    fail: (route, status, times) => failures[route].push(...Array<number>(times).fill(status)),
    die: close,
    close,
  };
}
