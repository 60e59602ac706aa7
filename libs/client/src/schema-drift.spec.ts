import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const CLIENT = join(process.cwd(), 'libs', 'client');

/**
 * The committed types must be exactly what the generator makes of the committed `openapi.json`
 * (which other tests compare with the server): a server change that is not carried into the client
 * fails here. Fix: `npm run openapi && npm run generate -w libs/client`.
 */
describe('the generated schema', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'client-schema-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is what openapi-typescript makes of the committed openapi.json', async () => {
    // Resolved from the client package, wherever npm placed the generator.
    const pkg = createRequire(join(CLIENT, 'package.json')).resolve('openapi-typescript/package.json');
    const bin = join(dirname(pkg), 'bin', 'cli.js');
    const out = join(dir, 'schema.ts');
    // The same command as `npm run generate`, writing elsewhere.
    const script: string = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')).scripts.generate;
    const [command, ...args] = script.split(/\s+/);
    expect(command).toBe('openapi-typescript');
    const o = args.indexOf('-o');
    args[o + 1] = out;
    await promisify(execFile)(process.execPath, [bin, ...args], { cwd: CLIENT });
    const committed = readFileSync(join(CLIENT, 'src', 'generated', 'schema.ts'), 'utf8');
    const fresh = readFileSync(out, 'utf8');
    if (fresh !== committed) {
      const a = committed.split('\n');
      const b = fresh.split('\n');
      const line = a.findIndex((l, i) => l !== b[i]);
      throw new Error(
        `libs/client/src/generated/schema.ts is out of date with openapi.json (first difference at line ${line + 1}:\n` +
          `  committed: ${a[line]}\n  generated: ${b[line]})\nRun: npm run generate -w libs/client`,
      );
    }
    expect(fresh).toContain('"/v1/jobs/{id}/events"');
  });
});
