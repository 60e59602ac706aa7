import type { ValueTransformer } from 'typeorm';

/**
 * Timestamps are stored as epoch milliseconds in a BIGINT: the same bytes on SQLite and PostgreSQL,
 * no time-zone conversions, and exact ordering. PostgreSQL's driver returns BIGINT as a string.
 */
export const epochMs: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? null : Number(value)),
};

const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from there on `toISOString` writes a six-digit year. */
const YEAR_10000_MS = 253_402_300_800_000;
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
let lastDay = NaN;
let lastDayPrefix = '';

/**
 * ISO-8601 for API responses, exactly as `Date.prototype.toISOString` writes it; null stays null.
 * A page of 50 jobs formats 200 timestamps, and `new Date(ms).toISOString()` took ~0.65 µs each
 * (13 % of a job listing's CPU): here the date part comes from `toISOString` once per day (timestamps
 * of one listing mostly share it) and the time of day is plain arithmetic.
 */
export const iso = (ms: number | null | undefined): string | null => {
  if (ms === null || ms === undefined) return null;
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000_MS) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== lastDay) {
    lastDayPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    lastDay = day;
  }
  let rest = ms - day * DAY_MS;
  const milli = rest % 1000;
  rest = (rest - milli) / 1000;
  const second = rest % 60;
  rest = (rest - second) / 60;
  const minute = rest % 60;
  const hour = (rest - minute) / 60;
  const millis = milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : String(milli);
  return `${lastDayPrefix}${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[second]}.${millis}Z`;
};
