import { describe, expect, it } from 'vitest';
import { checkParamHeaders, paramHeadersFor, paramHeadersOf } from './param-headers.js';

const SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', 'x-mcp-header': 'Region' },
    count: { type: 'integer', 'x-mcp-header': 'Count' },
    nested: { type: 'object', properties: { flag: { type: 'boolean', 'x-mcp-header': 'Flag' } } },
    // Not declarable: an array, a bad token, and a position only `properties` chains may reach.
    list: { type: 'array', 'x-mcp-header': 'List' },
    spaced: { type: 'string', 'x-mcp-header': 'Has Space' },
    choice: { anyOf: [{ type: 'string', 'x-mcp-header': 'Choice' }] },
  },
};

const headers = (values: Record<string, string>) => (name: string) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k.toLowerCase(), v]))[name];

describe('Mcp-Param-* headers (SEP-2243)', () => {
  it('finds the declarations reachable through properties, with a valid token, on primitives', () => {
    expect(paramHeadersOf(SCHEMA)).toEqual([
      { path: ['region'], header: 'Region', type: 'string' },
      { path: ['count'], header: 'Count', type: 'integer' },
      { path: ['nested', 'flag'], header: 'Flag', type: 'boolean' },
    ]);
  });

  it('accepts literal and canonical Base64 values that match the arguments', () => {
    const declared = paramHeadersOf(SCHEMA);
    const args = { region: 'Hello', count: 42, nested: { flag: true } };
    expect(
      checkParamHeaders(
        declared,
        args,
        headers({ 'Mcp-Param-Region': 'Hello', 'Mcp-Param-Count': '42', 'Mcp-Param-Flag': 'true' }),
      ),
    ).toBeUndefined();
    expect(
      checkParamHeaders(
        declared,
        args,
        headers({
          'Mcp-Param-Region': '=?base64?SGVsbG8=?=',
          'Mcp-Param-Count': '42.0',
          'Mcp-Param-Flag': 'true',
        }),
      ),
    ).toBeUndefined();
    // Without the whole sentinel a value is literal.
    expect(
      checkParamHeaders(declared, { region: 'SGVsbG8=' }, headers({ 'Mcp-Param-Region': 'SGVsbG8=' })),
    ).toBeUndefined();
  });

  it('refuses a missing header, a different value and malformed Base64, with -32020', () => {
    const declared = paramHeadersOf(SCHEMA);
    const missing = checkParamHeaders(declared, { region: 'x' }, headers({}));
    expect(missing?.code).toBe(-32020);
    expect(missing?.data.mismatch.header).toBe('Mcp-Param-Region');
    expect(checkParamHeaders(declared, { region: 'x' }, headers({ 'Mcp-Param-Region': 'y' }))?.code).toBe(
      -32020,
    );
    for (const bad of ['=?base64?SGVsbG8?=', '=?base64?SGVs!!!bG8=?='])
      expect(
        checkParamHeaders(declared, { region: 'Hello' }, headers({ 'Mcp-Param-Region': bad }))?.message,
      ).toMatch(/invalid Base64/);
  });

  it('ignores a header for an argument the call does not carry', () => {
    expect(
      checkParamHeaders(paramHeadersOf(SCHEMA), {}, headers({ 'Mcp-Param-Region': 'anything' })),
    ).toBeUndefined();
  });

  it('mirrors arguments as a client sends them: plain ASCII as is, the rest in Base64', () => {
    const declared = paramHeadersOf(SCHEMA);
    expect(paramHeadersFor(declared, { region: 'eu-west', count: 3, nested: { flag: false } })).toEqual({
      'Mcp-Param-Region': 'eu-west',
      'Mcp-Param-Count': '3',
      'Mcp-Param-Flag': 'false',
    });
    expect(paramHeadersFor(declared, { region: 'Zürich' })).toEqual({
      'Mcp-Param-Region': '=?base64?WsO8cmljaA==?=',
    });
    expect(paramHeadersFor(declared, { region: ' padded' })).toEqual({
      'Mcp-Param-Region': '=?base64?IHBhZGRlZA==?=',
    });
    // What it sends, it would accept.
    for (const region of ['eu-west', 'Zürich', ' padded', '=?base64?x?='])
      expect(
        checkParamHeaders(declared, { region }, headers(paramHeadersFor(declared, { region }))),
      ).toBeUndefined();
  });
});
