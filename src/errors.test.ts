import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as defined from './errors.js';
import * as pkg from './index.js';

/**
 * Codes and reasons are public API, so each must be documented where users look
 * (as Fastify's test ties its FST_ERR_ codes to docs/Reference/Errors.md):
 * docs/reference/errors.md (generated from this module) holds every one, the README every code an agent can see.
 */
const errorsPage = readFileSync(new URL('../docs/reference/errors.md', import.meta.url), 'utf8');
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The first cells, unquoted, of the tables of one `## ` section (or of the whole page). */
function firstCells(page: string, heading?: string): string[] {
  let text = page;
  if (heading !== undefined) {
    const start = page.indexOf(`\n## ${heading}\n`);
    expect(start, `docs/reference/errors.md has a section "## ${heading}"`).toBeGreaterThanOrEqual(0);
    const end = page.indexOf('\n## ', start + 1);
    text = page.slice(start, end < 0 ? undefined : end);
  }
  return [...text.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1] as string);
}

const answerCodes = Object.values(defined.IDEM_CODES);
const operatorCodes = Object.values(defined.OPERATOR_CODES);

describe('docs/reference/errors.md', () => {
  it('has a row for every code, and no row for a code that does not exist', () => {
    const documented = firstCells(errorsPage).filter((cell) => /^(IDEM|MCP)_[A-Z_]+$/.test(cell));
    expect([...new Set(documented)].sort()).toEqual([...answerCodes, ...operatorCodes].sort());
  });

  it('has a row for every IDEM_INVALID_INPUT reason, and only those', () => {
    expect(firstCells(errorsPage, '`IDEM_INVALID_INPUT` reasons').sort()).toEqual(
      [...defined.INVALID_INPUT_REASONS].sort(),
    );
  });

  it("has a row for every reason a store's file is refused, and only those", () => {
    expect(firstCells(errorsPage, 'Store refusal reasons').sort()).toEqual(
      [...defined.STORE_REFUSAL_REASONS].sort(),
    );
  });

  it('lists the operator codes in their own section', () => {
    expect(firstCells(errorsPage, 'Codes for operators').sort()).toEqual([...operatorCodes].sort());
  });
});

describe('README', () => {
  it('names every code an agent can see, and links to docs/errors.md for the rest', () => {
    const missing = answerCodes.filter((code) => !readme.includes(`\`${code}\``));
    expect(missing).toEqual([]);
    expect(readme).toContain('](docs/errors.md)');
  });
});

describe('error classes', () => {
  const made = (message: string) => ({
    ConfigError: new defined.ConfigError(message),
    CredentialError: new defined.CredentialError(message),
    UpstreamClosedError: new defined.UpstreamClosedError(message),
    UpstreamInvalidReplyError: new defined.UpstreamInvalidReplyError(message),
    UpstreamUnavailableError: new defined.UpstreamUnavailableError(message),
    NotWrittenError: new defined.NotWrittenError(message),
    IssuerMetadataError: new defined.IssuerMetadataError(message),
    ConsoleTokenError: new defined.ConsoleTokenError(message),
  });

  it("give each operator code to exactly one class, keeping the class's name and message", () => {
    const errors = made('what is wrong');
    for (const [name, error] of Object.entries(errors)) {
      expect(error.name).toBe(name);
      expect(error.message).toBe('what is wrong');
    }
    expect(Object.values(errors).map((error) => error.code)).toEqual(operatorCodes);
  });

  it('that a channel throws carry the code of the answer the caller gets, and are exported', () => {
    expect(pkg.DispatchRefusedError).toBe(defined.DispatchRefusedError);
    expect(pkg.NotDispatchedError).toBe(defined.NotDispatchedError);
    expect(pkg.OutcomeUnknownError).toBe(defined.OutcomeUnknownError);
    expect(pkg.InvalidInputError).toBe(defined.InvalidInputError);
    expect(new defined.DispatchRefusedError('x').code).toBe('IDEM_DENIED');
    expect(new defined.DispatchRefusedError('x')).toBeInstanceOf(defined.NotDispatchedError);
    expect(new defined.NotDispatchedError('x').code).toBe('IDEM_NOT_EXECUTED');
    expect(new defined.OutcomeUnknownError('x').code).toBe('IDEM_OUTCOME_UNKNOWN');
    expect(new defined.InvalidInputError('cycle', '$.a', 'a cycle').code).toBe('IDEM_INVALID_INPUT');
  });

  it('keep answer codes and operator codes apart', () => {
    expect(answerCodes.filter((code) => (operatorCodes as string[]).includes(code))).toEqual([]);
  });
});
