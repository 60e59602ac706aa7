import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, request as httpRequest, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import playwright from 'playwright-core';
import type { Browser } from 'playwright-core';
import ts from 'typescript';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * `@opentinker/client` in a real browser (Debian's Chromium): its sources and those of the Tinker wire it
 * imports, compiled to plain ES modules without a bundler (packages through an import map), are loaded by a
 * page next to the API (same origin through a small proxy),
 * so a Node-only import, a Node global or a Node-only fetch feature fails here. The page submits a job,
 * follows it with `watchJob` through a stream cut mid-way, and maps a refused key.
 */
declare const location: { origin: string };

const CHROMIUM = '/usr/bin/chromium';
const TEST_MS = 60_000;
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const CLIENT_SRC = join(process.cwd(), 'libs', 'client', 'src');
const WIRE_SRC = join(process.cwd(), 'libs', 'tinker-wire', 'src');
const NODE_MODULES = join(process.cwd(), 'node_modules');
/** The client's bare imports as a browser resolves them without a bundler: an import map to ES module files. */
const IMPORT_MAP = {
  imports: {
    'openapi-fetch': '/node_modules/openapi-fetch/dist/index.mjs',
    '@opentinker/tinker-wire': '/wire/index.js',
    '@bufbuild/protobuf': '/node_modules/@bufbuild/protobuf/dist/esm/index.js',
    '@bufbuild/protobuf/wire': '/node_modules/@bufbuild/protobuf/dist/esm/wire/index.js',
    '@bufbuild/protobuf/codegenv2': '/node_modules/@bufbuild/protobuf/dist/esm/codegenv2/index.js',
    zod: '/node_modules/zod/index.js',
  },
};
const SERVED_PACKAGES = ['openapi-fetch', '@bufbuild/protobuf', 'zod'].map((name) => join(NODE_MODULES, name) + '/');

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`Skipping the client browser test: ${CHROMIUM} is missing (apt-get install chromium).`);

(haveChromium ? describe : describe.skip)('@opentinker/client in Chromium', () => {
  let t: TestApp;
  let out: string;
  let site: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const api = new URL(await t.app.getUrl());
    out = mkdtempSync(join(tmpdir(), 'client-esm-'));
    compileToEsm(CLIENT_SRC, join(out, 'client'));
    compileToEsm(WIRE_SRC, join(out, 'wire'));
    site = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<!doctype html><script type="importmap">${JSON.stringify(IMPORT_MAP)}</script><title>client</title>`);
      }
      const file = staticFile(out, path);
      if (file) {
        if (!existsSync(file)) return res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return res.end(readFileSync(file));
      }
      // Everything else goes to the API, streamed (the event stream too).
      const upstream = httpRequest({ host: api.hostname, port: api.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
    browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  }, TEST_MS);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => site?.close(r));
    await t?.close();
    rmSync(out, { recursive: true, force: true });
  }, TEST_MS);

  it(
    'submits a job, watches it through a cut stream without losing or repeating an event, and maps errors',
    async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(String(e)));
      // The browser logs every non-2xx answer (the refused key, the missing favicon): those are expected.
      page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(m.text()));
      await page.goto(origin + '/');
      const result = await page.evaluate(async (key: string) => {
        const { OpenTinkerClient, isOpenTinkerError } = await import('/client/index.js' as string);
        let cuts = 0;
        // The first event stream is cut after 600 bytes, as a dropped connection would.
        const cutting = async (request: any, init?: any) => {
          const response = await fetch(request, init);
          if (!request.url.endsWith('/events') || cuts > 0) return response;
          cuts++;
          const reader = response.body!.getReader();
          let passed = 0;
          const body = new (globalThis as any).ReadableStream({
            async pull(controller: any) {
              const { done, value } = await reader.read();
              if (done) return controller.close();
              if (passed + value.length >= 600) {
                controller.enqueue(value.slice(0, 600 - passed));
                reader.cancel();
                return controller.error(new TypeError('network error'));
              }
              passed += value.length;
              controller.enqueue(value);
            },
          });
          return new Response(body, { status: response.status, headers: response.headers });
        };
        const client = new OpenTinkerClient({ baseUrl: location.origin, apiKey: key, fetch: cutting });
        const job = await client.jobs.submit({ kind: 'sleep', steps: 5, step_seconds: 0.02 });
        const ids: number[] = [];
        let reconnects = 0;
        let end: unknown;
        for await (const e of client.watchJob(job.id, { backoff: { baseDelayMs: 1 }, onReconnect: () => reconnects++ })) {
          if (e.type === 'end') end = e.data;
          else ids.push(e.id);
        }
        const refused = await new OpenTinkerClient({ baseUrl: location.origin, apiKey: 'otk_wrong_key_0123456789abcdef' }).users.me().catch((e: unknown) => e);
        return {
          id: job.id,
          ids,
          cuts,
          reconnects,
          end,
          final: (await client.waitForJob(job.id)).state,
          refused: isOpenTinkerError(refused) ? { code: refused.code, status: refused.status } : String(refused),
        };
      }, t.adminKey);
      const reference = (await t.request('GET', `/v1/jobs/${result.id}/events`)).text.match(/^id: \d+$/gm)!.map((l) => Number(l.slice(4)));
      expect(problems).toEqual([]);
      expect(result.cuts).toBe(1);
      expect(result.reconnects).toBe(1);
      expect(result.ids).toEqual(reference);
      expect(result.end).toEqual({ state: 'succeeded' });
      expect(result.final).toBe('succeeded');
      expect(result.refused).toEqual({ code: 'OT_ERR_UNAUTHENTICATED', status: 401 });
      await page.close();
    },
    TEST_MS,
  );
});

/** The file behind a path of the page's own modules (the compiled client and wire, the mapped packages), if any. */
function staticFile(out: string, path: string): string | undefined {
  if (path.startsWith('/client/') || path.startsWith('/wire/')) return join(out, path);
  if (!path.startsWith('/node_modules/')) return undefined;
  const file = join(NODE_MODULES, path.slice('/node_modules/'.length));
  return SERVED_PACKAGES.some((dir) => file.startsWith(dir)) ? file : undefined;
}

/**
 * Compiles the client's sources file by file to ES modules, adding the `.js` that browsers need on
 * relative imports (Node's resolver adds it; a browser does not).
 */
function compileToEsm(src: string, dest: string): void {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
    });
  for (const file of walk(src)) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false, isolatedModules: true },
    });
    const target = join(dest, relative(src, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText.replace(/(from\s+['"])(\.{1,2}\/[^'"]+)(['"])/g, '$1$2.js$3'));
  }
}
