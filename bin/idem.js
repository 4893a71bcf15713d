#!/usr/bin/env node
// The CLI is compiled by `npm ci` / `npm install` (the `prepare` script) into dist/.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'idem: dist/ is missing. Run `npm run build` (npm ci runs it unless scripts are disabled).\n',
  );
  process.exit(2);
}
await import(entry.href);
