import { join, resolve } from 'node:path';

/**
 * The server package's folder, found once from where this file lies (`<root>/dist/config/`). Under
 * Jest, which runs the sources as ES modules, `__dirname` may be missing: the working directory is the
 * repository root there.
 */
export const INSTALL_ROOT = typeof __dirname === 'string' ? resolve(__dirname, '..', '..') : process.cwd();

/**
 * Where the installation's files are: the entry files of the processes and threads the server starts,
 * the package whose dependencies are the first-party environments, the default plugins folder and the
 * dashboard's files. Made once, by `loadConfig`, and read from `AppConfig.install` everywhere.
 */
export class InstallLayout {
  constructor(readonly root: string = INSTALL_ROOT) {}

  /** A compiled file of the server: `<root>/dist/<parts>`. */
  dist(...parts: string[]): string {
    return join(this.root, 'dist', ...parts);
  }

  /** The job runner a worker starts for each job. */
  get runnerEntry(): string {
    return this.dist('job-runner.main.js');
  }

  /** The model server the API starts for each checkpoint it serves. */
  get modelServerEntry(): string {
    return this.dist('serving', 'model-server.main.js');
  }

  /** The process that checks an uploaded model folder. */
  get modelCheckEntry(): string {
    return this.dist('serving', 'model-check.main.js');
  }

  /** The process that parses an uploaded dataset. */
  get datasetReaderEntry(): string {
    return this.dist('datasets', 'dataset-reader.main.js');
  }

  /** The drop-in environments folder when `plugins_dir` is not set. */
  get defaultPluginsDir(): string {
    return join(this.root, 'plugins');
  }
}
