import type { JobState, JobSummary } from './job.entity';

/**
 * The `jobs` columns of a {@link JobSummary}, as {@link summaryFromRow} reads them. The spec,
 * the resume state and the lease are not read at all: they are the large or internal columns.
 */
export const SUMMARY_COLUMNS = [
  'id',
  'owner_id',
  'kind',
  'name',
  'state',
  'priority',
  'environment_id',
  'resources',
  'devices',
  'worker_id',
  'attempts',
  'max_attempts',
  'error',
  'exit_code',
  'progress',
  'cancel_requested_at',
  'created_at',
  'started_at',
  'finished_at',
  'updated_at',
] as const;

/** Position of each column in a row. */
const AT = Object.fromEntries(SUMMARY_COLUMNS.map((c, i) => [c, i])) as Record<(typeof SUMMARY_COLUMNS)[number], number>;

const json = (v: unknown): never => (v === null ? null : JSON.parse(v as string)) as never;
/** PostgreSQL's driver returns BIGINT as a string, SQLite a number (the `epochMs` transformer's rule). */
const num = (v: unknown): never => (v === null ? null : Number(v)) as never;

/**
 * A row of {@link SUMMARY_COLUMNS} read as an array (SQLite and PostgreSQL), converted as the entity's
 * columns are (`simple-json` parsed, BIGINT timestamps as numbers).
 */
export function summaryFromRow(row: unknown[]): JobSummary {
  return {
    id: row[AT.id] as string,
    ownerId: row[AT.owner_id] as string,
    kind: row[AT.kind] as string,
    name: row[AT.name] as string | null,
    state: row[AT.state] as JobState,
    priority: num(row[AT.priority]),
    environmentId: row[AT.environment_id] as string | null,
    resources: json(row[AT.resources]),
    devices: json(row[AT.devices]),
    workerId: row[AT.worker_id] as string | null,
    attempts: num(row[AT.attempts]),
    maxAttempts: num(row[AT.max_attempts]),
    error: row[AT.error] as string | null,
    exitCode: num(row[AT.exit_code]),
    progress: json(row[AT.progress]),
    cancelRequestedAt: num(row[AT.cancel_requested_at]),
    createdAt: num(row[AT.created_at]),
    startedAt: num(row[AT.started_at]),
    finishedAt: num(row[AT.finished_at]),
    updatedAt: num(row[AT.updated_at]),
  };
}
