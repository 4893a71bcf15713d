import { fileURLToPath } from 'node:url';

/**
 * A document of the package's docs/ by its path on this machine, for messages
 * that send the reader to it: a bare "docs/security.md" means nothing to
 * someone who ran `npx idem`, whose copy sits in npm's cache. The same path
 * from src/ (development) and dist/ (installed): both are one folder below the
 * package root. The package ships docs/ (package.json `files`).
 */
export function packageDoc(name: string): string {
  return fileURLToPath(new URL(`../../docs/${name}`, import.meta.url));
}
