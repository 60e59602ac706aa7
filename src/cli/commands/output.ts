/** How the client commands write: tables and sentences for people, JSON for programs. */

/** Prints a value as indented JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function printLine(text = ''): void {
  process.stdout.write(text + '\n');
}

/**
 * Aligned columns with a header; cells are trimmed to one line.
 *
 * @example
 * ```ts
 * table([{ name: 'math', status: 'loaded' }], [['ID', (r) => r.name], ['STATUS', (r) => r.status]]);
 * // ID    STATUS
 * // math  loaded
 * ```
 */
export function table<T>(rows: readonly T[], columns: [header: string, cell: (row: T) => string | number | null | undefined][]): string {
  const cells = rows.map((row) => columns.map(([, cell]) => oneLine(cell(row))));
  const widths = columns.map(([header], i) => Math.max(header.length, ...cells.map((r) => r[i].length)));
  const render = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [render(columns.map(([h]) => h)), ...cells.map(render)].join('\n');
}

function oneLine(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value).replace(/\s*\n\s*/g, ' ');
}

/** `1.5 KiB`, `12 B`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** How long ago an ISO time was: `5s ago`, `3m ago`, `2h ago`, `4d ago`. */
export function formatAge(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** A metric value short enough for a progress line: 4 significant digits. */
export function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}
