import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENGINE_SETTINGS } from '@opentinker/engine/settings';
import { CONFIGURATION_DOC, renderConfigurationDoc } from './configuration-doc';
import { OTHER_VARIABLES, SETTINGS, settingEnvName } from './settings';

describe('docs/configuration.md', () => {
  const doc = renderConfigurationDoc();

  it('is the one generated from the settings schema (run `npm run docs:config` after changing a setting)', () => {
    const committed = readFileSync(join(process.cwd(), CONFIGURATION_DOC), 'utf8');
    expect(committed).toBe(doc);
  });

  it("documents every setting, the engine's included, and every other OPENTINKER_ variable", () => {
    for (const key of Object.keys(SETTINGS)) expect(doc).toContain(`| \`${key}\` | \`${settingEnvName(key)}\` |`);
    for (const def of ENGINE_SETTINGS) expect(doc).toContain(`\`${def.env}\``);
    for (const v of OTHER_VARIABLES) expect(doc).toContain(`| \`${v.name}\` |`);
  });
});
