import { mkdirSync } from 'node:fs';
import { secureDataFolder } from '../core/data-folder';
import { join } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { UserEntity } from '../auth/user.entity';
import { JobArtifactEntity } from '../jobs/job-artifact.entity';
import { JobEventEntity } from '../jobs/job-event.entity';
import { JobMetricEntity } from '../jobs/job-metric.entity';
import { JobEntity } from '../jobs/job.entity';
import { DatasetEntity } from '../datasets/dataset.entity';
import { WorkerEntity } from '../scheduler/worker.entity';
import { SessionCallEntity } from '../sessions/session-call.entity';
import type { AppConfig } from '../config/app-config';
import { Initial1764700000000 } from './1764700000000-initial.migration';
import { JobListIndexes1764800000000 } from './1764800000000-job-list-indexes.migration';
import { SessionCalls1765000000000 } from './1765000000000-session-calls.migration';
import { Datasets1765100000000 } from './1765100000000-datasets.migration';
import { JobEnvironment1765200000000 } from './1765200000000-job-environment.migration';
import { JobRowVersion1765300000000 } from './1765300000000-job-row-version.migration';
import { JobSecrets1765400000000 } from './1765400000000-job-secrets.migration';
import { DropJobRowVersion1765500000000 } from './1765500000000-drop-job-row-version.migration';
import { JobVersion1765600000000 } from './1765600000000-job-version.migration';
import { ApiKeyIds1765700000000 } from './1765700000000-api-key-ids.migration';
import { FairDispatch1765710000000 } from './1765710000000-fair-dispatch.migration';
import { JobSecretEntity } from '../jobs/job-secret.entity';
import { sealStoredSecrets } from '../jobs/job-secrets-cipher';
import { HubAccessEntity } from '../hub/hub-access.entity';
import { HubAccess1765720000000 } from './1765720000000-hub-access.migration';
import { FinishedJobSecrets1765720010000 } from './1765720010000-finished-job-secrets.migration';
import { UserModelEntity } from '../models/user-model.entity';
import { UserModels1765730000000 } from './1765730000000-user-models.migration';
import { TinkerModelEntity } from '../tinker/tinker-model.entity';
import { TinkerRunnerEntity } from '../tinker/tinker-runner.entity';
import { TinkerSamplerEntity } from '../tinker/tinker-sampler.entity';
import { TinkerSessionEntity } from '../tinker/tinker-session.entity';
import { Tinker1765750000000 } from './1765750000000-tinker.migration';

export const ENTITIES = [
  UserEntity,
  ApiKeyEntity,
  JobEntity,
  JobEventEntity,
  JobMetricEntity,
  JobArtifactEntity,
  WorkerEntity,
  SessionCallEntity,
  DatasetEntity,
  JobSecretEntity,
  HubAccessEntity,
  UserModelEntity,
  TinkerSessionEntity,
  TinkerRunnerEntity,
  TinkerModelEntity,
  TinkerSamplerEntity,
];
export const MIGRATIONS = [
  Initial1764700000000,
  JobListIndexes1764800000000,
  SessionCalls1765000000000,
  Datasets1765100000000,
  JobEnvironment1765200000000,
  JobRowVersion1765300000000,
  JobSecrets1765400000000,
  DropJobRowVersion1765500000000,
  JobVersion1765600000000,
  ApiKeyIds1765700000000,
  FairDispatch1765710000000,
  HubAccess1765720000000,
  FinishedJobSecrets1765720010000,
  UserModels1765730000000,
  Tinker1765750000000,
];

export function dataSourceOptions(config: AppConfig): DataSourceOptions {
  const common = { entities: ENTITIES, migrations: MIGRATIONS, migrationsRun: false, synchronize: false, logging: false } as const;
  if (config.values.database_url) {
    return { ...common, type: 'postgres', url: config.values.database_url, extra: { max: 20 } };
  }
  mkdirSync(config.home, { recursive: true });
  return {
    ...common,
    type: 'better-sqlite3',
    database: join(config.home, 'opentinker.db'),
    // WAL lets the API read while a worker process writes; busy_timeout waits out short write locks.
    prepareDatabase: (db: { pragma(sql: string): unknown }) => {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
    },
  };
}

/** Opens the database, brings its schema up to date and encrypts job secrets still stored in plain text. */
export async function openDatabase(config: AppConfig): Promise<DataSource> {
  secureDataFolder(config.home);
  const dataSource = new DataSource(dataSourceOptions(config));
  await dataSource.initialize();
  if (config.usesPostgres) {
    // API and worker processes may boot together; the advisory lock makes one of them migrate.
    const runner = dataSource.createQueryRunner();
    try {
      await runner.query('SELECT pg_advisory_lock(7317001)');
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock(7317001)').catch(() => undefined);
      await runner.release();
    }
  } else {
    await migrateSqlite(dataSource);
    serializeTransactions(dataSource);
  }
  try {
    await sealStoredSecrets(dataSource, config);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}

/**
 * TypeORM runs every SQLite query on one connection, and two `transaction()` calls that overlap both
 * send `BEGIN` ("cannot start a transaction within a transaction", seen under 50 concurrent job
 * submissions while the worker claimed jobs). Transactions therefore run one after another. No
 * transaction callback may start another through the DataSource (it would wait for itself): nested
 * work goes through the callback's EntityManager.
 */
function serializeTransactions(dataSource: DataSource): void {
  const transaction = dataSource.transaction.bind(dataSource) as (...args: unknown[]) => Promise<unknown>;
  let tail: Promise<unknown> = Promise.resolve();
  dataSource.transaction = ((...args: unknown[]) => {
    const run = tail.then(() => transaction(...args));
    tail = run.catch(() => undefined);
    return run;
  }) as DataSource['transaction'];
}

/** Two processes opening a fresh SQLite file at once race on the schema; the loser re-checks. */
async function migrateSqlite(dataSource: DataSource): Promise<void> {
  try {
    await dataSource.runMigrations({ transaction: 'all' });
  } catch (error) {
    await new Promise((r) => setTimeout(r, 250));
    if (await dataSource.showMigrations()) throw error;
  }
}
