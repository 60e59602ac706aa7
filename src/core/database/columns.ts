import type { ValueTransformer } from 'typeorm';

/**
 * Timestamps are stored as epoch milliseconds in a BIGINT: the same bytes on SQLite and PostgreSQL,
 * no time-zone conversions, and exact ordering. PostgreSQL's driver returns BIGINT as a string.
 */
export const epochMs: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? null : Number(value)),
};

export const nowMs = (): number => Date.now();

/** ISO-8601 for API responses; null stays null. */
export const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();
