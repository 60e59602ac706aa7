/** `npm run docs:config`: writes docs/configuration.md from the settings schema (run from the repository root). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIGURATION_DOC, renderConfigurationDoc } from './configuration-doc';
import { INSTALL_ROOT } from './install-layout';

const file = join(INSTALL_ROOT, CONFIGURATION_DOC);
writeFileSync(file, renderConfigurationDoc());
process.stdout.write(`Wrote ${file}\n`);
