import { Command, Option } from 'commander';
import { loadConfig, redactSetting, type AppConfig, type SettingSource } from '../../config/app-config';
import { SETTINGS, type SettingKey } from '../../config/settings';
import { printJson, printLine, table } from './output';

/** The flags `serve` takes that set settings; `config` takes them too, to show what `serve` would run with. */
export interface ServeFlags {
  host?: string;
  port?: string;
  worker: boolean;
}

export function addServeFlags(command: Command): Command {
  return command
    .addOption(new Option('--host <host>', 'address to listen on (OPENTINKER_HOST)'))
    .addOption(new Option('--port <port>', 'port to listen on (OPENTINKER_PORT)'))
    .option('--no-worker', 'do not run jobs in this process (OPENTINKER_EMBEDDED_WORKER=false)');
}

/** The settings the serve flags give (those not passed are left to the other sources). */
export function serveOverrides(opts: ServeFlags): Partial<Record<SettingKey, unknown>> {
  return { host: opts.host, port: opts.port, ...(opts.worker ? {} : { embedded_worker: false }) };
}

export interface EffectiveSetting {
  key: SettingKey;
  /** The value, secrets redacted; null when unset. */
  value: unknown;
  source: SettingSource['kind'];
  /** The environment variable or the file it came from. */
  from?: string;
}

/** Every setting's effective value (secrets redacted) and where it came from, in the schema's order. */
export function effectiveSettings(config: AppConfig): EffectiveSetting[] {
  return (Object.keys(SETTINGS) as SettingKey[]).map((key) => {
    const source = config.sources[key] ?? { kind: 'default' };
    const from = source.kind === 'env' ? source.name : source.kind === 'file' ? source.file : undefined;
    const value = redactSetting(key, config.values[key]) ?? null;
    return { key, value, source: source.kind, ...(from ? { from } : {}) };
  });
}

const SOURCE_TEXT: Record<SettingSource['kind'], string> = { default: 'default', file: 'config file', env: 'environment', flag: 'flag' };

function shown(value: unknown): string {
  if (value === null) return '(unset)';
  if (Array.isArray(value)) return value.length ? value.join(',') : '(none)';
  return String(value);
}

/** `opentinker config`: the settings `serve` (or `worker`) would run with, and where each came from. */
export function registerConfigCommand(program: Command): void {
  addServeFlags(program.command('config').description('Print the effective settings, each with its source (default, config file, environment variable, flag); secrets redacted'))
    .option('--json', 'print JSON')
    .action((opts: ServeFlags & { json?: boolean }) => {
      const config = loadConfig(process.env, serveOverrides(opts));
      const settings = effectiveSettings(config);
      if (opts.json) {
        printJson({ config_file: process.env.OPENTINKER_CONFIG || null, install: config.install.root, settings });
        return;
      }
      printLine(`Config file: ${process.env.OPENTINKER_CONFIG || '(none; set OPENTINKER_CONFIG)'}`);
      printLine(`Installation: ${config.install.root}`);
      printLine();
      printLine(
        table(settings, [
          ['SETTING', (s) => s.key],
          ['VALUE', (s) => shown(s.value)],
          ['SOURCE', (s) => (s.from ? `${SOURCE_TEXT[s.source]} ${s.from}` : SOURCE_TEXT[s.source])],
        ]),
      );
    });
}
