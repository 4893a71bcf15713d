#!/usr/bin/env node
// The CLI is compiled by `npm ci` / `npm install` (the `prepare` script) into dist/.
import { existsSync } from 'node:fs';

// Said before anything is loaded: an older Node fails on the first import it lacks (node:crypto's
// hash, 20.12), with a SyntaxError that names neither Node's version nor the fix.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 12)) {
  process.stderr.write(
    `idem: needs Node.js 20.12 or later; this is ${process.version}. Install a current Node.js (an LTS release) and run it again.\n`,
  );
  process.exit(2);
}

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'idem: dist/ is missing. Run `npm run build` (npm ci runs it unless scripts are disabled).\n',
  );
  process.exit(2);
}
await import(entry.href);
