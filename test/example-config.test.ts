import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runIdem } from './support/run-cli.js';

describe('the shipped example config', () => {
  it('passes its own `idem lint`: one status tool (the payments upstream, built with the library, keeps its own out of sight), no annotation contradicted', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idem-example-'));
    const result = await runIdem(['lint', '--config', 'examples/idem.yaml'], { dataDir });
    rmSync(dataDir, { recursive: true, force: true });
    expect(result.stdout).toBe(
      "OK: no contract contradicts an upstream's annotations, and every tool has one or the other.\n",
    );
    expect(result.code).toBe(0);
    // Two upstreams start, one under tsx (about two seconds of CPU): on a loaded machine, more than the default.
  }, 180_000);
});
