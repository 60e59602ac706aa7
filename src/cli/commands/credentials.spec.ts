import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionWithConfig, credentialsPath, DEFAULT_URL, readCredentials, removeCredentials, resolveConnection, writeCredentials } from './credentials';

describe('credentials', () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'creds-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('are saved readable by the owner only, and read back', () => {
    const path = credentialsPath(home);
    writeCredentials({ url: 'http://h:1', key: 'otk_secret' }, path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, '.opentinker')).mode & 0o077).toBe(0);
    expect(readCredentials(path)).toEqual({ url: 'http://h:1', key: 'otk_secret' });
    // Rewriting a file whose mode was loosened tightens it again.
    writeFileSync(path, '{}', { mode: 0o644 });
    writeCredentials({ url: 'http://h:1', key: 'otk_other' }, path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(removeCredentials(path)).toBe(true);
    expect(removeCredentials(path)).toBe(false);
    expect(readCredentials(path)).toBeUndefined();
  });

  it('report a damaged file instead of guessing', () => {
    const path = credentialsPath(home);
    writeCredentials({ url: 'http://h:1', key: 'k' }, path);
    writeFileSync(path, '{"url": 1}');
    expect(() => readCredentials(path)).toThrow(/lacks "url" or "key"/);
    writeFileSync(path, 'nope');
    expect(() => readCredentials(path)).toThrow(/not valid JSON/);
    expect(readFileSync(path, 'utf8')).toBe('nope');
  });
});

describe('resolveConnection', () => {
  const saved = { url: 'http://box:8780/', key: 'otk_saved' };

  it('takes the URL from the flag, then OPENTINKER_URL, then the saved login, then the default', () => {
    expect(resolveConnection('http://flag:1', { OPENTINKER_URL: 'http://env:1' }, saved).url).toBe('http://flag:1');
    expect(resolveConnection(undefined, { OPENTINKER_URL: 'http://env:1' }, saved).url).toBe('http://env:1');
    expect(resolveConnection(undefined, {}, saved)).toEqual({ url: 'http://box:8780', key: 'otk_saved', keySource: 'credentials' });
    expect(resolveConnection(undefined, {}, undefined)).toEqual({ url: DEFAULT_URL });
  });

  it('prefers OPENTINKER_API_KEY, and never sends the saved key to another server', () => {
    expect(resolveConnection(undefined, { OPENTINKER_API_KEY: 'otk_env' }, saved)).toMatchObject({ key: 'otk_env', keySource: 'OPENTINKER_API_KEY' });
    expect(resolveConnection('http://elsewhere:8780', {}, saved)).toEqual({ url: 'http://elsewhere:8780' });
    expect(resolveConnection('http://box:8780', {}, saved).key).toBe('otk_saved');
  });

  it('refuses a URL that is not http(s), naming it', () => {
    expect(() => resolveConnection('box:8780', {}, undefined)).toThrow('"box:8780" is not an http(s) URL');
    expect(() => resolveConnection('not a url', {}, undefined)).toThrow('"not a url" is not a URL');
  });
});

describe('connectionWithConfig', () => {
  it("uses a seed client config's scheduler_url and scheduler_api_key only where nothing else names a server or key", () => {
    const seed = { url: 'http://0.0.0.0:8789', apiKey: 'otk_98b8db24ccd64c92e1fdd9a232e209fa' };
    const login = { url: 'http://gpu:8780', key: 'otk_mine' };
    // Logged in: the login's server and key, each set-aside said.
    expect(connectionWithConfig(undefined, {}, login, seed)).toEqual({
      notes: [
        'scheduler_url of --config (http://0.0.0.0:8789) is not used: the saved login names the server, http://gpu:8780',
        'scheduler_api_key of --config is not used: the saved login (opentinker login) gives the key',
      ],
    });
    // The command line's server, with the login's key for it; OPENTINKER_API_KEY over the config's key.
    expect(connectionWithConfig('http://gpu:8780/', {}, login, { apiKey: seed.apiKey }).key).toBeUndefined();
    expect(connectionWithConfig('http://gpu:8780', { OPENTINKER_API_KEY: 'otk_env' }, undefined, { apiKey: seed.apiKey })).toEqual({
      notes: ['scheduler_api_key of --config is not used: OPENTINKER_API_KEY gives the key'],
    });
    // Nothing else names them: the config's.
    expect(connectionWithConfig(undefined, {}, undefined, seed)).toEqual({ url: seed.url, key: seed.apiKey, notes: [] });
    // A login for another server sends no key there: the config's key is used for the command line's server.
    expect(connectionWithConfig('http://other:1', {}, login, { apiKey: seed.apiKey })).toEqual({ key: seed.apiKey, notes: [] });
    // The same server and key: nothing to say.
    expect(connectionWithConfig(undefined, {}, login, { url: 'http://gpu:8780/', apiKey: 'otk_mine' })).toEqual({ notes: [] });
    expect(connectionWithConfig(undefined, {}, login, {})).toEqual({ notes: [] });
  });
});
