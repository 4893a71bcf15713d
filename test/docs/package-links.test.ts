/**
 * Issue 46.9: the installed package's docs link only to what the package ships. The files
 * `npm pack` would put in the tarball (package.json `files`); every relative link in a shipped
 * Markdown file must name one of them (examples/ was linked, and not shipped).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/node22.js';

describe('the packed docs', () => {
  it('link only to files the package ships', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO_ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const [{ files }] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const shipped = new Set(files.map((f) => f.path));
    expect(shipped).toContain('examples/idem.yaml');
    const broken: string[] = [];
    for (const file of shipped) {
      if (!file.endsWith('.md')) continue;
      const text = readFileSync(join(REPO_ROOT, file), 'utf8');
      for (const [, link] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (!link || /^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
        const target = normalize(join(dirname(file), link)).replace(/\/$/, '');
        if (!shipped.has(target) && ![...shipped].some((f) => f.startsWith(`${target}/`)))
          broken.push(`${file} → ${link}`);
      }
    }
    expect(broken).toEqual([]);
  }, 60_000);
});
