import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the Hugging Face Hub (the real one is unreachable from tests), with the Hub's URL layout
 * and headers:
 *
 * - `GET /api/{models,datasets}/<id>/revision/<rev>` → `{ id, sha, siblings }` (404 + `X-Error-Code`);
 * - `GET /api/{models,datasets}/<id>/tree/<rev>?recursive=true` → `[{ type, path, size, oid, lfs? }]`;
 * - `GET [/datasets]/<id>/resolve/<rev>/<file>`: small files answer 200 with `ETag: "<git sha1>"`, LFS
 *   files (safetensors, parquet) a 302 to `<cdnUrl>/cdn/<sha256>` (another port, so another origin)
 *   with `X-Linked-Etag`/`X-Linked-Size`;
 * - `GET /cdn/<sha256>`: the bytes. Both honour `Range: bytes=<from>-` with 206 and `Content-Range`.
 *
 * Tests steer it: `cutAfter` drops the connection after that many body bytes of a file, `corrupt` serves
 * other bytes than listed, `token` requires `Authorization: Bearer <token>` on the Hub (never on the CDN),
 * a repo's `tokens` make it private (401 `RepoNotFound`, as the Hub answers for a repo one may not read,
 * unless one of them is sent), and `requests` records every path asked for.
 */
export interface FakeRepo {
  type: 'model' | 'dataset';
  id: string;
  /** Branch or tag → files of that commit. */
  revisions: Record<string, Record<string, Buffer>>;
  /** A private repo: the bearer tokens that may read it. */
  tokens?: string[];
}

interface Commit {
  sha: string;
  files: Map<string, { data: Buffer; oid: string; lfs: boolean }>;
}

export interface FakeHub {
  url: string;
  /** The "CDN": another origin (port) LFS downloads are redirected to. */
  cdnUrl: string;
  requests: Array<{ path: string; range: string | null; auth: string | null }>;
  /** Per file path: close the socket after this many bytes of its body (once, then cleared). */
  cutAfter: Map<string, number>;
  /** Per file path: the bytes served instead of the listed ones. */
  corrupt: Map<string, Buffer>;
  token: string | null;
  commitOf(type: 'model' | 'dataset', id: string, revision: string): string;
  close(): Promise<void>;
}

const isLfs = (path: string) => /\.(safetensors|parquet|bin)$/.test(path);
const gitSha1 = (data: Buffer) => createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

export async function startFakeHub(repos: FakeRepo[]): Promise<FakeHub> {
  const commits = new Map<string, Map<string, Commit>>(); // `type:id` → revision (and sha) → commit
  const privateRepos = new Map(repos.filter((r) => r.tokens).map((r) => [`${r.type}:${r.id}`, r.tokens!]));
  const blobs = new Map<string, { path: string; data: Buffer }>();
  for (const repo of repos) {
    const byRev = new Map<string, Commit>();
    for (const [revision, files] of Object.entries(repo.revisions)) {
      const sha = createHash('sha1').update(`${repo.type}:${repo.id}@${revision}`).digest('hex');
      const commit: Commit = { sha, files: new Map() };
      for (const [path, data] of Object.entries(files)) {
        const lfs = isLfs(path);
        const oid = lfs ? sha256(data) : gitSha1(data);
        commit.files.set(path, { data, oid, lfs });
        if (lfs) blobs.set(oid, { path, data });
      }
      byRev.set(revision, commit);
      byRev.set(sha, commit);
    }
    commits.set(`${repo.type}:${repo.id}`, byRev);
  }

  const hub: FakeHub = {
    url: '',
    cdnUrl: '',
    requests: [],
    cutAfter: new Map(),
    corrupt: new Map(),
    token: null,
    commitOf: (type, id, revision) => commits.get(`${type}:${id}`)!.get(revision)!.sha,
    close: async () => {
      server.closeAllConnections();
      cdnServer.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await new Promise((resolve) => cdnServer.close(resolve));
    },
  };

  const notFound = (res: ServerResponse, code: string) => {
    res.writeHead(404, { 'content-type': 'application/json', 'x-error-code': code });
    res.end(JSON.stringify({ error: `${code}` }));
  };

  /** Sends `data` honouring Range, cutting the connection where a test asked. */
  const sendBytes = (req: IncomingMessage, res: ServerResponse, path: string, data: Buffer, headers: Record<string, string>) => {
    const served = hub.corrupt.get(path) ?? data;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = m ? Number(m[1]) : 0;
    if (from > served.length || (m && from === served.length && served.length > 0)) {
      res.writeHead(416, { 'content-range': `bytes */${served.length}` });
      res.end();
      return;
    }
    const body = served.subarray(from);
    res.writeHead(m ? 206 : 200, {
      ...headers,
      'content-length': String(body.length),
      'accept-ranges': 'bytes',
      ...(m ? { 'content-range': `bytes ${from}-${served.length - 1}/${served.length}` } : {}),
    });
    const cut = hub.cutAfter.get(path);
    if (cut !== undefined && cut < body.length) {
      hub.cutAfter.delete(path);
      // Give the client time to take the bytes in before the connection drops.
      res.write(body.subarray(0, cut), () => setTimeout(() => res.destroy(), 200));
      return;
    }
    res.end(body);
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = decodeURIComponent(url.pathname);
    hub.requests.push({ path, range: req.headers.range ?? null, auth: req.headers.authorization ?? null });

    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(path);
    if (cdn) {
      const blob = blobs.get(cdn[1]);
      if (!blob) return notFound(res, 'EntryNotFound');
      return sendBytes(req, res, blob.path, blob.data, { etag: `"cdn-${cdn[1].slice(0, 8)}"` });
    }
    if (hub.token !== null && req.headers.authorization !== `Bearer ${hub.token}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'x-error-code': 'GatedRepo' });
      res.end(JSON.stringify({ error: 'Access to this repo is restricted' }));
      return;
    }

    // A private repo answers as the Hub does to whoever may not read it, before saying anything of it.
    const apiName = /^\/api\/(models|datasets)\/(.+?)\/(?:revision|tree)\//.exec(path);
    const fileName = /^\/(datasets\/)?(.+?)\/resolve\//.exec(path);
    const repoKey = apiName ? `${apiName[1] === 'models' ? 'model' : 'dataset'}:${apiName[2]}` : fileName ? `${fileName[1] ? 'dataset' : 'model'}:${fileName[2]}` : null;
    const readers = repoKey === null ? undefined : privateRepos.get(repoKey);
    if (readers && !readers.some((t) => req.headers.authorization === `Bearer ${t}`)) {
      res.writeHead(401, { 'content-type': 'application/json', 'x-error-code': 'RepoNotFound' });
      res.end(JSON.stringify({ error: 'Repository not found' }));
      return;
    }

    const api = /^\/api\/(models|datasets)\/(.+?)\/(revision|tree)\/([^/]+)$/.exec(path);
    if (api) {
      const type = api[1] === 'models' ? 'model' : 'dataset';
      const byRev = commits.get(`${type}:${api[2]}`);
      if (!byRev) return notFound(res, 'RepoNotFound');
      const commit = byRev.get(api[4] === 'HEAD' ? 'main' : api[4]);
      if (!commit) return notFound(res, 'RevisionNotFound');
      res.writeHead(200, { 'content-type': 'application/json' });
      if (api[3] === 'revision') {
        res.end(
          JSON.stringify({
            _id: 'x',
            id: api[2],
            sha: commit.sha,
            private: false,
            siblings: [...commit.files.keys()].map((rfilename) => ({ rfilename })),
            lastModified: '2026-12-01T00:00:00.000Z',
          }),
        );
      } else {
        res.end(
          JSON.stringify(
            [...commit.files].map(([p, f]) => ({
              type: 'file',
              path: p,
              size: f.lfs ? 134 : f.data.length,
              oid: f.lfs ? gitSha1(Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${f.oid}\nsize ${f.data.length}\n`)) : f.oid,
              ...(f.lfs ? { lfs: { oid: f.oid, size: f.data.length, pointerSize: 134 } } : {}),
            })),
          ),
        );
      }
      return;
    }

    const resolve = /^\/(datasets\/)?(.+?)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve) {
      const type = resolve[1] ? 'dataset' : 'model';
      const commit = commits.get(`${type}:${resolve[2]}`)?.get(resolve[3]);
      const file = commit?.files.get(resolve[4]);
      if (!commit || !file) return notFound(res, 'EntryNotFound');
      if (file.lfs) {
        res.writeHead(302, {
          location: `${hub.cdnUrl}/cdn/${file.oid}`,
          'x-linked-etag': `"${file.oid}"`,
          'x-linked-size': String(file.data.length),
          'x-repo-commit': commit.sha,
          etag: `"${gitSha1(Buffer.from('pointer'))}"`,
        });
        res.end();
        return;
      }
      // The Hub's ETag of a small file is the git sha1 of what it serves.
      return sendBytes(req, res, resolve[4], file.data, { etag: `"${gitSha1(hub.corrupt.get(resolve[4]) ?? file.data)}"`, 'x-repo-commit': commit.sha });
    }
    notFound(res, 'RouteNotFound');
  };
  const server: Server = createServer(handler);
  const cdnServer: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => cdnServer.listen(0, '127.0.0.1', resolve));
  hub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hub.cdnUrl = `http://127.0.0.1:${(cdnServer.address() as AddressInfo).port}`;
  return hub;
}
