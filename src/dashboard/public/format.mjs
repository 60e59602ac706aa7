/**
 * Display formatting shared by the views. Pure functions (no DOM), so they are unit-tested in Node.
 */

const UNITS = [
  ['d', 86_400],
  ['h', 3_600],
  ['min', 60],
  ['s', 1],
];

/**
 * How long ago `iso` was, in the largest whole unit: `"42 s"`, `"5 min"`, `"3 h"`, `"2 d"`.
 *
 * @example
 * age('2026-01-01T10:00:00Z', Date.parse('2026-01-01T10:05:30Z')) // '5 min'
 */
export function age(iso, now = Date.now()) {
  if (!iso) return '—';
  const seconds = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  for (const [unit, size] of UNITS) if (seconds >= size) return `${Math.floor(seconds / size)} ${unit}`;
  return '0 s';
}

/** Wall-clock span between two instants (`"1 min 12 s"`), or from `from` until now when `to` is null. */
export function duration(from, to, now = Date.now()) {
  if (!from) return '—';
  let seconds = Math.max(0, Math.round(((to ? Date.parse(to) : now) - Date.parse(from)) / 1000));
  const parts = [];
  for (const [unit, size] of UNITS) {
    if (seconds >= size || (unit === 's' && parts.length === 0)) {
      parts.push(`${Math.floor(seconds / size)} ${unit}`);
      seconds %= size;
    }
    if (parts.length === 2) break;
  }
  return parts.join(' ');
}

/** A byte count for people: `"812 B"`, `"1.5 KiB"`, `"3.2 MiB"`. */
export function bytes(n) {
  if (!Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

/** The first block of a UUID: enough to tell jobs apart on screen. */
export function shortId(id) {
  return String(id).split('-')[0];
}

/** A metric value with at most 4 significant digits, integers left alone. */
export function metricValue(value) {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  return abs !== 0 && (abs < 1e-3 || abs >= 1e6) ? value.toExponential(3) : String(Number(value.toPrecision(4)));
}

/** A local date and time for tooltips and detail lists. */
export function dateTime(iso) {
  return iso ? new Date(iso).toLocaleString() : '—';
}

/** Job states that will not change any more. */
export const FINAL_STATES = ['succeeded', 'failed', 'cancelled'];

/** Whether a job can still be cancelled (the server answers 409 otherwise). */
export function cancellable(job) {
  return !FINAL_STATES.includes(job.state) && !job.cancel_requested;
}
