import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './cli-error';

export const DEFAULT_URL = 'http://127.0.0.1:8780';

/** What `opentinker login` saves. */
export interface Credentials {
  url: string;
  key: string;
}

/** Where the CLI talks to, and with which key, after flags, environment and saved credentials. */
export interface Connection {
  url: string;
  key?: string;
  /** Where the key came from, for messages. */
  keySource?: 'OPENTINKER_API_KEY' | 'credentials';
}

/** `~/.opentinker/credentials` (HOME decides `~`, so tests can point it elsewhere). */
export function credentialsPath(home: string = homedir()): string {
  return join(home, '.opentinker', 'credentials');
}

export function readCredentials(path: string = credentialsPath()): Credentials | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: Partial<Credentials>;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<Credentials>;
  } catch (error) {
    throw new CliError(`${path} is not valid JSON (${(error as Error).message}); run \`opentinker login\` again`, EXIT.AUTH);
  }
  if (typeof parsed.url !== 'string' || typeof parsed.key !== 'string') {
    throw new CliError(`${path} lacks "url" or "key"; run \`opentinker login\` again`, EXIT.AUTH);
  }
  return { url: parsed.url, key: parsed.key };
}

/**
 * Saves the credentials readable by the owner only (0600, in a 0700 folder). Written to a temporary
 * file first, so a crash never leaves half a file, and the secret is never world-readable, even briefly.
 */
export function writeCredentials(credentials: Credentials, path: string = credentialsPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** Removes saved credentials; false when there were none. */
export function removeCredentials(path: string = credentialsPath()): boolean {
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

/** A URL without trailing slashes, so `http://h:1/` and `http://h:1` are the same server. */
export function normaliseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`"${url}" is not a URL (expected something like ${DEFAULT_URL})`, EXIT.USAGE);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`"${url}" is not an http(s) URL`, EXIT.USAGE);
  }
  return url.replace(/\/+$/, '');
}

/**
 * Resolves the server and key: `--url`, then `OPENTINKER_URL`, then the saved URL, then the default;
 * `OPENTINKER_API_KEY`, then the saved key. A saved key is only sent to the server it was saved for:
 * pointing `--url` elsewhere must not hand the key to another host.
 */
export function resolveConnection(urlFlag: string | undefined, env: NodeJS.ProcessEnv, saved: Credentials | undefined): Connection {
  const url = normaliseUrl(urlFlag ?? env.OPENTINKER_URL ?? saved?.url ?? DEFAULT_URL);
  if (env.OPENTINKER_API_KEY) return { url, key: env.OPENTINKER_API_KEY, keySource: 'OPENTINKER_API_KEY' };
  if (saved && normaliseUrl(saved.url) === url) return { url, key: saved.key, keySource: 'credentials' };
  return { url };
}

/** What {@link connectionWithConfig} decides. */
export interface ConfigConnection {
  /** The server to use as `--url`, when only the config names one. */
  url?: string;
  /** The key to use as `OPENTINKER_API_KEY`, when only the config gives one. */
  key?: string;
  /** Why a config's server or key is set aside, for the command to print. */
  notes: string[];
}

/**
 * A seed client config's own server and key (`scheduler_url`, `scheduler_api_key` in a `--config`) count
 * only where nothing else names one: `--url` (or the command line's `scheduler_url`), `OPENTINKER_URL` or
 * the saved login for the server; `OPENTINKER_API_KEY` or the saved login for the key. Configs are copied
 * between people (the seed's ship with an example key and `http://0.0.0.0:8789`), a login is the user's own.
 *
 * @example
 * ```ts
 * connectionWithConfig(undefined, {}, { url: 'http://gpu:8780', key: 'otk_mine' }, { url: 'http://0.0.0.0:8789', key: 'otk_98b8…' });
 * // { notes: ['scheduler_url of --config (http://0.0.0.0:8789) is not used: …', 'scheduler_api_key of --config is not used: …'] }
 * ```
 */
export function connectionWithConfig(
  urlFlag: string | undefined,
  env: NodeJS.ProcessEnv,
  saved: Credentials | undefined,
  config: { url?: string; apiKey?: string },
): ConfigConnection {
  const notes: string[] = [];
  const named = urlFlag ?? env.OPENTINKER_URL ?? saved?.url;
  if (config.url !== undefined && named !== undefined && normaliseUrl(config.url) !== normaliseUrl(named)) {
    const by = urlFlag !== undefined ? 'the command line' : env.OPENTINKER_URL !== undefined ? 'OPENTINKER_URL' : 'the saved login';
    notes.push(`scheduler_url of --config (${config.url}) is not used: ${by} names the server, ${normaliseUrl(named)}`);
  }
  const url = named === undefined ? config.url : undefined;
  if (config.apiKey === undefined) return { url, notes };
  const { key, keySource } = resolveConnection(urlFlag ?? url, env, saved);
  if (key === undefined) return { url, key: config.apiKey, notes };
  if (key !== config.apiKey)
    notes.push(`scheduler_api_key of --config is not used: ${keySource === 'OPENTINKER_API_KEY' ? 'OPENTINKER_API_KEY' : 'the saved login (opentinker login)'} gives the key`);
  return { url, notes };
}
