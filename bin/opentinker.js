#!/usr/bin/env node
'use strict';
const { join } = require('node:path');
const { existsSync } = require('node:fs');

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'cli', 'cli.js');
if (!existsSync(entry)) {
  process.stderr.write('opentinker: not built yet. Run `npm run build` (npm install runs it for you).\n');
  process.exit(1);
}
require(entry).main(process.argv);
