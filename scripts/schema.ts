/** Writes schema/idem-config.schema.json from the config's zod schema (npm run schema). */
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/gateway/config/index.js';

const path = new URL('../schema/idem-config.schema.json', import.meta.url);
writeFileSync(
  path,
  `${JSON.stringify({ title: 'Idem gateway config', ...(configJsonSchema() as object) }, null, 2)}\n`,
);
process.stdout.write(`wrote ${path.pathname}\n`);
