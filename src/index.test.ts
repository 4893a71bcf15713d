import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The package's face is a decision, not what happens to be exported: a name added to or dropped
 * from src/index.ts fails here until this list says so too (and docs/library.md, "The package's
 * face", says why a user needs it). Powertools' idempotency package exports about fifteen; Idem's
 * stays small enough to read in one glance.
 */
const PLANNED = {
  values: [
    'CredentialError',
    'DispatchRefusedError',
    'IDEM_CODES',
    'Idem',
    'IdemError',
    'InvalidInputError',
    'MissingPackageError',
    'NotDispatchedError',
    'OutcomeUnknownError',
    'StoreRefusedError',
    'StoreUnavailableError',
    'openStore',
    'serveStreamableHttp',
  ],
  types: [
    'ActionChannel',
    'ActionDispatch',
    'Approver',
    'ApproverAnswer',
    'ApproverRequest',
    'DispatchContext',
    'ExecutionStore',
    'IdemCode',
    'IdemHttpToolConfig',
    'IdemOptions',
    'IdemSshToolConfig',
    'IdemToolConfig',
    'IdemToolExtra',
    'IdemToolHandler',
    'Logger',
    'ProbeAnswer',
    'ServedHttp',
    'StatusProbe',
    'StoreSpec',
    'ToolContract',
    'ToolResult',
  ],
};
const MAX_NAMES = 40;

/** The names src/index.ts exports, read from its export statements: each spelled out, by kind. */
function declaredExports(): { values: string[]; types: string[]; wildcards: number } {
  const path = new URL('./index.ts', import.meta.url);
  const source = ts.createSourceFile('index.ts', readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022);
  const values: string[] = [];
  const types: string[] = [];
  let wildcards = 0;
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const clause = statement.exportClause;
    if (!clause || !ts.isNamedExports(clause)) {
      wildcards += 1;
      continue;
    }
    for (const specifier of clause.elements)
      (statement.isTypeOnly || specifier.isTypeOnly ? types : values).push(specifier.name.text);
  }
  return { values: values.sort(), types: types.sort(), wildcards };
}

describe("the package's face (src/index.ts)", () => {
  const declared = declaredExports();

  it('spells out every name (no `export *`: a name added below would slip out unseen)', () => {
    expect(declared.wildcards).toBe(0);
  });

  it('exports at run time exactly the values it declares', async () => {
    const face = await import('./index.js');
    expect(Object.keys(face).sort()).toEqual(declared.values);
  });

  it('is the planned list: no name added or removed by accident', () => {
    expect({ values: declared.values, types: declared.types }).toEqual({
      values: [...PLANNED.values].sort(),
      types: [...PLANNED.types].sort(),
    });
  });

  it(`stays within ${MAX_NAMES} names`, () => {
    expect(declared.values.length + declared.types.length).toBeLessThanOrEqual(MAX_NAMES);
  });
});
