import { realpathSync } from 'node:fs';

/**
 * The server's own folders as tenants see them: in text meant for a tenant (error answers, job logs and
 * errors) the data folder reads `$OPENTINKER_HOME` and the installation `<install>`, so an error about
 * a file tells what went wrong without mapping the host. Each folder also under the name its links
 * resolve to, since code that follows links (model loading does) reports that one.
 *
 * @example
 * ```ts
 * new HostPaths([['/srv/ot', '$OPENTINKER_HOME']]).redact('/srv/ot/jobs/1/x: no such file'); // '$OPENTINKER_HOME/jobs/1/x: no such file'
 * ```
 */
export class HostPaths {
  private readonly pairs: Array<[string, string]>;

  constructor(folders: ReadonlyArray<readonly [path: string, name: string]>) {
    const pairs = new Map<string, string>();
    for (const [path, name] of folders) {
      const trimmed = path.replace(/\/+$/, '');
      // `/` (or nothing) names no folder in particular.
      if (trimmed.length <= 1) continue;
      pairs.set(trimmed, name);
      const real = realPath(trimmed);
      if (real && real !== trimmed && real.length > 1) pairs.set(real, name);
    }
    // The longer first: one folder may hold another.
    this.pairs = [...pairs].sort((a, b) => b[0].length - a[0].length);
  }

  /** `text` with every host folder replaced by its name. */
  redact(text: string): string {
    let out = text;
    for (const [path, name] of this.pairs) if (out.includes(path)) out = out.split(path).join(name);
    return out;
  }

  /** A JSON value (an error's `details`) with every string in it redacted. */
  redactJson<T>(value: T): T {
    if (value === undefined) return value;
    const text = JSON.stringify(value);
    let out = text;
    // Inside JSON text a path appears escaped the way JSON.stringify writes it.
    for (const [path, name] of this.pairs) {
      const escaped = JSON.stringify(path).slice(1, -1);
      if (out.includes(escaped)) out = out.split(escaped).join(name);
    }
    return out === text ? value : (JSON.parse(out) as T);
  }
}

function realPath(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Redacts nothing: for callers with no folders to hide (unit tests, tools). */
export const NO_HOST_PATHS = new HostPaths([]);
