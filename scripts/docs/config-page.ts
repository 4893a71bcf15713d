/** docs/reference/config.md: every key of the gateway's config, read off its JSON Schema. */
import { configJsonSchema } from '../../src/gateway/config/index.js';
import { code, generatedHeading, table } from './markdown.js';
import { type FieldRow, type JsonSchema, keyRows, type WalkOptions } from './schema-fields.js';

/** A tool contract, wherever the config takes one: its fields are on their own page. */
export function isContract(schema: JsonSchema): boolean {
  return schema.properties?.replay !== undefined && schema.properties.fingerprint !== undefined;
}

export function rowsTable(rows: readonly FieldRow[]): string {
  return table(
    ['key', 'type', 'default', 'description'],
    rows.map((row) => [code(row.key), row.type, row.default, row.description]),
  );
}

export function configPage(): string {
  const schema = configJsonSchema() as JsonSchema;
  const options: WalkOptions = {
    defs: schema.$defs ?? {},
    elsewhere: (sub) => (isContract(sub) ? 'a tool contract ([its fields](contracts.md))' : undefined),
  };
  const sections = Object.entries(schema.properties ?? {}).map(([name, sub]) => {
    const rows = keyRows(name, sub, (schema.required ?? []).includes(name), options);
    return `## ${code(name)}\n\n${rowsTable(rows)}\n`;
  });
  return [
    generatedHeading(
      'Config reference',
      '`schema/idem-config.schema.json` (the zod schema in `src/gateway/config.ts`)',
    ),
    'Every key of the file `idem gateway --config` and `idem lint --config` read (YAML, or JSON). ' +
      'An unknown key is an error, reported at its line with the nearest valid key. ' +
      'A duration is a string such as `"30s"`, `"15m"`, `"48h"`, or a number of milliseconds. ' +
      '`<name>` stands for a name you choose. The JSON Schema itself is ' +
      '[schema/idem-config.schema.json](../../schema/idem-config.schema.json), for editors that complete and check YAML.\n',
    ...sections,
  ].join('\n');
}
