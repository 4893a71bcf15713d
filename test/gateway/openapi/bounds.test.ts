/**
 * Hostile OpenAPI documents (issue 44 item 2): a few KB that name billions of objects — `$ref`s
 * that fan out, YAML aliases of aliases, nesting thousands deep — or that are too large, are
 * refused at start naming the document, the bound and its `limits.<key>`, after reading what is
 * written and nothing more (each in well under a second on a quiet machine; before, the fan-out
 * and the aliases had not started after 60 s). An operation whose own input schema is too large
 * (schemas that all refer to each other) is skipped, saying why. An operator's `limits:` moves a
 * bound. `idem gateway` on one exits at once with the refusal.
 * Full-size figures: scripts/openapi-bombs.ts (docs/security.md).
 */

import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { GatewayConfigSchema } from '../../../src/gateway/config/index.js';
import { importHttpTools } from '../../../src/gateway/openapi/index.js';
import { DEFAULT_OPENAPI_LIMITS } from '../../../src/gateway/openapi/limits.js';
import { BoundedFiles } from '../../../src/gateway/openapi/read.js';
import {
  deepNesting,
  largeDocument,
  refChain,
  refFanOut,
  refMesh,
  yamlAliasBomb,
} from '../../support/openapi-bombs.js';
import { runIdem } from '../../support/run-cli.js';
import { freshDir, removeTemporaries } from '../../support/temp-dirs.js';

afterAll(removeTemporaries);

/** The document written to a file, imported as `http_tools_from[0]` (with `limits`, if given). */
async function importing(name: string, text: string, limits?: Record<string, number>) {
  const file = join(freshDir('openapi-bounds'), name);
  writeFileSync(file, text);
  const config = GatewayConfigSchema.parse({
    store: { kind: 'memory' },
    http_tools_from: [{ openapi: file, ...(limits ? { limits } : {}) }],
  });
  const started = performance.now();
  let imported: Awaited<ReturnType<typeof importHttpTools>> | undefined;
  let error: unknown;
  try {
    imported = await importHttpTools(config);
  } catch (caught) {
    error = caught;
  }
  return { file, ms: performance.now() - started, imported, error };
}

/** A generous cap for a refusal that takes milliseconds: before, these ran past 60 s. */
const REFUSED_WITHIN_MS = 10_000;

describe('an OpenAPI document past a bound is refused at start', () => {
  const attacks: Array<[string, string, string, RegExp]> = [
    [
      '$ref fan-out 10 × 10 (10¹⁰ objects)',
      'fanout.json',
      refFanOut(10),
      /its \$refs \(and YAML aliases\) expand it to more than 2,000,000 objects \(limits\.expanded\): #\/paths\/~1things\/post\/requestBody\/content\/application~1json\/schema → #\/components\/schemas\/S0\/properties\/p0/,
    ],
    [
      'YAML aliases 9 × 10 (10⁹ strings)',
      'laughs.yaml',
      yamlAliasBomb(),
      /its YAML aliases expand past 1,000 \(an alias of aliases of aliases, "a billion laughs"\), in .*laughs\.yaml/,
    ],
    [
      '3,000 levels of nesting (JSON)',
      'deep.json',
      deepNesting(3000),
      /it nests deeper than 128 levels \(limits\.depth\), at .*deep\.json#\/x-deep\/0\/0\//,
    ],
    [
      '3,000 levels of nesting (YAML)',
      'deep.yaml',
      `openapi: 3.1.0\ninfo: { title: t, version: "1" }\npaths: {}\nx-deep: ${'['.repeat(3000)}${']'.repeat(3000)}\n`,
      /it nests deeper than 128 levels \(limits\.depth\), at .*deep\.yaml \(4:\d+\)/,
    ],
    [
      'a chain of 3,000 $refs',
      'chain.json',
      refChain(3000),
      /once its \$refs are replaced it nests deeper than 128 levels \(limits\.depth\), at …/,
    ],
    [
      '25 operations whose input schemas are 1,224 objects each',
      'many.json',
      refFanOut(3, 10, 25),
      /the input schemas of its operations come to more than 25,000 objects together \(limits\.input_schemas\), at POST \/things\d+/,
    ],
    [
      'a document of 40 MiB',
      'large.json',
      largeDocument(40 * 2 ** 20),
      /it is larger than 33,554,432 bytes \(limits\.bytes; the document and the files its \$refs name, together\), reading .*large\.json/,
    ],
  ];
  for (const [what, name, text, refusal] of attacks) {
    it(what, async () => {
      const { file, ms, error } = await importing(name, text);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain(`http_tools_from[0]: ${file} is refused: `);
      expect((error as Error).message).toMatch(refusal);
      expect(ms).toBeLessThan(REFUSED_WITHIN_MS);
    });
  }

  it('an operation whose own input schema is past its bound is skipped, saying why', async () => {
    for (const [name, text] of [
      ['mesh.json', refMesh(12)],
      ['fanout4.json', refFanOut(4)],
    ] as const) {
      const { imported, ms } = await importing(name, text);
      const [result] = imported?.imports ?? [];
      expect(result?.tools).toEqual([]);
      expect(result?.skipped.map((s) => [s.label, s.reason])).toEqual([
        [
          'POST /things',
          'its input schema comes to more than 2,000 objects once its $refs are replaced (limits.input_schema)',
        ],
      ]);
      expect(ms).toBeLessThan(REFUSED_WITHIN_MS);
    }
  });

  it('an operator moves a bound with limits: (and the document loads within it)', async () => {
    const { error } = await importing('fanout3.json', refFanOut(3), { expanded: 1_000 });
    expect((error as Error).message).toMatch(/more than 1,000 objects \(limits\.expanded\)/);
    const { imported } = await importing('fanout3.json', refFanOut(3));
    expect(imported?.imports[0]?.tools.map((t) => t.name)).toEqual(['createThing']);
  });

  it('a URL that sends without end is cut at the bound, and one that redirects is not followed', async () => {
    let redirects = 0;
    const server = createServer((req, res) => {
      if (req.url === '/moved') {
        redirects++;
        res.writeHead(302, { location: '/endless' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      // The read itself (the loader refuses a loopback URL before reading it: swagger-parser's rule).
      const files = new BoundedFiles({ ...DEFAULT_OPENAPI_LIMITS, bytes: 4 * 2 ** 20 });
      await expect(files.fetchUrl({ url: `${base}/endless` })).rejects.toThrow(
        /larger than 4,194,304 bytes \(limits\.bytes/,
      );
      expect(files.refusal?.limit).toBe('bytes');
      await expect(
        new BoundedFiles(DEFAULT_OPENAPI_LIMITS).fetchUrl({ url: `${base}/moved` }),
      ).rejects.toThrow('HTTP 302: redirects are not followed');
      expect(redirects).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('idem gateway on a hostile OpenAPI document', { timeout: 60_000 }, () => {
  it('exits at once with the refusal, for the $ref fan-out and the alias bomb', async () => {
    for (const [name, text] of [
      ['fanout.json', refFanOut(10)],
      ['laughs.yaml', yamlAliasBomb()],
    ] as const) {
      const dir = freshDir('openapi-bounds-cli');
      const document = join(dir, name);
      writeFileSync(document, text);
      const config = join(dir, 'idem.json');
      writeFileSync(config, JSON.stringify({ data_dir: dir, http_tools_from: [{ openapi: document }] }));
      // A gateway that starts listens until killed: the timeout turns a hang into a failure here.
      const result = await runIdem(['gateway', '--config', config, '--listen', '127.0.0.1:0'], {
        dataDir: dir,
        timeoutMs: 30_000,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`http_tools_from[0]: ${document} is refused: `);
      expect(result.stderr).not.toMatch(/Streamable HTTP on/);
    }
  });
});
