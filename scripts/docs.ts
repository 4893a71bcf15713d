/** Writes the reference pages under docs/reference/ from the code (npm run docs); test/docs/references.test.ts checks them. */
import { writeFileSync } from 'node:fs';
import { referencePages } from './docs/pages.js';

for (const page of referencePages()) {
  writeFileSync(new URL(`../${page.path}`, import.meta.url), page.text);
  process.stdout.write(`wrote ${page.path}\n`);
}
