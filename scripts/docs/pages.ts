/** The reference pages `npm run docs` writes, each made from the code it describes. */
import { cliPage } from './cli-page.js';
import { configPage } from './config-page.js';
import { contractsPage } from './contracts-page.js';
import { errorsPage } from './errors-page.js';

export interface ReferencePage {
  /** From the repository's root. */
  path: string;
  text: string;
}

export function referencePages(): ReferencePage[] {
  return [
    { path: 'docs/reference/cli.md', text: cliPage() },
    { path: 'docs/reference/config.md', text: configPage() },
    { path: 'docs/reference/contracts.md', text: contractsPage() },
    { path: 'docs/reference/errors.md', text: errorsPage() },
  ];
}
