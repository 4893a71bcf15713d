/** docs/reference/contracts.md: the fields of a tool contract, read off the config's JSON Schema. */
import { configJsonSchema } from '../../src/gateway/config/index.js';
import { rowsTable } from './config-page.js';
import { generatedHeading } from './markdown.js';
import { fieldRows, type JsonSchema } from './schema-fields.js';

export function contractsPage(): string {
  const schema = configJsonSchema() as JsonSchema;
  const contract = schema.properties?.tools?.additionalProperties;
  if (typeof contract !== 'object' || contract === null)
    throw new Error('the config has no tools.<name> contract');
  const rows = fieldRows(contract, '', { defs: schema.$defs ?? {} });
  return [
    generatedHeading(
      'Contract reference',
      '`ToolContractSchema` (`src/contracts/contract.ts`), as the gateway config takes it under `tools.<name>`',
    ),
    'The fields of a tool contract. The gateway reads them under `tools.<name>`, and under ' +
      '`contract:` of each `http_tools.<name>` and `ssh_tools.<name>` (there without `status_probe`); ' +
      '`defaults:` takes a subset ([config reference](config.md#defaults)). The library takes the same fields as ' +
      '`contract` in `idem.tool(…)`, with `status_probe` a function instead of a tool to call. ' +
      'An unknown field is an error. What the fields mean together: [contracts](../contracts.md).\n',
    `${rowsTable(rows)}\n`,
  ].join('\n');
}
