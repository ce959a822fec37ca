#!/usr/bin/env node
'use strict';
// The `agent` command. `npm install` builds dist/ (postinstall), so this works right after install.
const path = require('node:path');
const fs = require('node:fs');
const entry = path.join(__dirname, '..', 'dist', 'src', 'main.js');
if (!fs.existsSync(entry)) {
  process.stderr.write('agent: dist/ is missing; run `npm run build` (npm install does this) first\n');
  process.exit(5);
}
require(entry);
