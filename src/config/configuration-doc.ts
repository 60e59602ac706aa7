import { OTHER_VARIABLES, SETTING_SECTIONS, SETTINGS, settingEnvName, type SettingDefinition, type SettingSection } from './settings';

/** Where the generated reference lives, from the repository root. */
export const CONFIGURATION_DOC = 'docs/configuration.md';

const SECTION_NOTES: Partial<Record<SettingSection, string>> = {
  'Environments and sandboxes':
    "The `sandbox_*` settings are ceilings: an environment marks the config keys that size its sandbox with `{ limit }` (math-tool's " +
    '`memory_mb`, …) and a tenant may ask for up to these.',
  Engine:
    'Defined by the engine package (`@opentinker/engine/settings`, also exported from its main entry). The worker passes them to each ' +
    "job runner, and the API to each model server, which start the engine with exactly these values. Used on its own, the engine's " +
    '`initBackend()` reads the same `OPENTINKER_ENGINE_*` variables for every option it is not given.',
};

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function defaultOf(def: SettingDefinition): string {
  if (def.defaultText !== undefined) return def.defaultText;
  const parsed = def.schema.safeParse(undefined);
  const value: unknown = parsed.success ? parsed.data : undefined;
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return '—';
  return `\`${Array.isArray(value) ? value.join(',') : String(value)}\``;
}

/** docs/configuration.md, rendered from the settings schema (`npm run docs:config` writes it). */
export function renderConfigurationDoc(): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated from src/config/settings.ts by `npm run docs:config`; edit that file, not this one. -->',
    '',
    'Every process of OpenTinker (the API server, workers, the job runners and model servers they start, and the engine inside those)',
    'reads one set of settings. Each comes from, lowest to highest precedence: its default, a YAML file named by `OPENTINKER_CONFIG`',
    '(a mapping of the keys below), the environment variable `OPENTINKER_<KEY>`, and command-line flags (`serve --host`, `--port`,',
    '`--no-worker`). They are validated at start: a bad value, an unknown key in the file or an unknown `OPENTINKER_*` variable stops',
    "the process with the key's name. Lists are YAML sequences in the file and comma-separated in variables; booleans are `true`/`false`",
    '(or `1`/`0`, `yes`/`no`).',
    '',
    '`opentinker config` prints the settings a `serve` (it takes the same flags) would run with, each with its source, secrets',
    '(`admin_key`, credentials in URLs) redacted; `--json` for programs. Secrets are never logged.',
    '',
    '```',
    'OPENTINKER_CONFIG=/etc/opentinker.yaml OPENTINKER_PORT=9000 opentinker config --no-worker',
    '```',
    '',
  ];
  const keys = Object.keys(SETTINGS) as Array<keyof typeof SETTINGS>;
  for (const section of SETTING_SECTIONS) {
    const inSection = keys.filter((k) => SETTINGS[k].section === section);
    if (inSection.length === 0) continue;
    out.push(`## ${section}`, '');
    const note = SECTION_NOTES[section];
    if (note) out.push(note, '');
    out.push('| key | environment variable | default | meaning |', '|---|---|---|---|');
    for (const key of inSection) {
      const def = SETTINGS[key] as SettingDefinition;
      const flags = def.flags?.length ? ` Flag: ${def.flags.map((f) => `\`${f}\``).join(', ')}.` : '';
      const secret = def.secret ? ' Secret: never printed.' : '';
      out.push(`| \`${key}\` | \`${settingEnvName(key)}\` | ${cell(defaultOf(def))} | ${cell(def.doc + flags + secret)} |`);
    }
    out.push('');
  }
  out.push(
    '## Other variables',
    '',
    'These `OPENTINKER_*` variables are not settings (a config file cannot hold them); each is read by one program.',
    '',
    '| variable | read by | meaning |',
    '|---|---|---|',
    ...OTHER_VARIABLES.map((v) => `| \`${v.name}\` | ${cell(v.readBy)} | ${cell(v.doc)} |`),
    '',
  );
  return out.join('\n');
}
