import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostPaths } from './host-paths';

describe('HostPaths', () => {
  const root = mkdtempSync(join(tmpdir(), 'host-paths-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('names each folder, the longer first, under its own name and the one its links resolve to', () => {
    const home = join(root, 'home');
    mkdirSync(join(home, 'install'), { recursive: true });
    symlinkSync(home, join(root, 'link'));
    const paths = new HostPaths([
      [join(root, 'link'), '$OPENTINKER_HOME'],
      [join(home, 'install/'), '<install>'],
      ['/', 'root'],
    ]);
    expect(paths.redact(`${home}/install/dist/x.js failed; ${root}/link/jobs/1 and ${home}/jobs/2`)).toBe(
      '<install>/dist/x.js failed; $OPENTINKER_HOME/jobs/1 and $OPENTINKER_HOME/jobs/2',
    );
    expect(paths.redact('/etc/passwd')).toBe('/etc/passwd');
  });

  it('redacts every string of a JSON value, paths with characters JSON escapes included', () => {
    const paths = new HostPaths([['/srv/a "quoted" dir', '$OPENTINKER_HOME']]);
    const details = [{ path: 'model', message: 'cannot read /srv/a "quoted" dir/x' }];
    expect(paths.redactJson(details)).toEqual([{ path: 'model', message: 'cannot read $OPENTINKER_HOME/x' }]);
    expect(paths.redactJson(undefined)).toBeUndefined();
  });
});
