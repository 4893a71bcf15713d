import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { InputValidators } from './input-validators.js';

type Schema = Tool['inputSchema'];

/** A new object each time, as each session's tools/list gives one. */
const deploySchema = (): Schema =>
  ({
    $id: 'https://tools.example.test/deploy',
    type: 'object',
    properties: { service: { type: 'string' }, region: { type: 'string', default: 'eu-1' } },
    required: ['service'],
  }) as Schema;

const numbered = (i: number): Schema =>
  ({ type: 'object', properties: { [`p${i}`]: { type: 'integer' } }, required: [`p${i}`] }) as Schema;

describe('InputValidators', () => {
  it('validates, fills in defaults, and says what is wrong', () => {
    const validate = new InputValidators().for(deploySchema());
    const args: Record<string, unknown> = { service: 'api' };
    expect(validate?.(args)).toBe(true);
    expect(args).toEqual({ service: 'api', region: 'eu-1' });
    expect(validate?.({ service: 5 })).toBe(false);
    expect(validate?.errors?.[0]).toMatchObject({ instancePath: '/service', message: 'must be string' });
  });

  it('compiles a schema once however many sessions list it: the same content is the same validator', () => {
    const validators = new InputValidators();
    const first = validators.for(numbered(1));
    expect(first).toBeDefined();
    for (let session = 0; session < 5; session++) expect(validators.for(numbered(1))).toBe(first);
    expect(validators.size).toBe(1);
  });

  it('a schema with an $id validates in every session, not only the first', () => {
    const validators = new InputValidators();
    const first = validators.for(deploySchema());
    const second = validators.for(deploySchema());
    expect(second).toBe(first);
    const args: Record<string, unknown> = { service: 'api' };
    expect(second?.(args)).toBe(true);
    expect(args.region).toBe('eu-1');
  });

  it('two different schemas with one $id each validate by their own content', () => {
    const validators = new InputValidators();
    const other = { ...deploySchema(), properties: { service: { type: 'integer' } } } as Schema;
    const byString = validators.for(deploySchema());
    const byInteger = validators.for(other);
    expect(byString?.({ service: 'api' })).toBe(true);
    expect(byInteger).toBeDefined();
    expect(byInteger?.({ service: 'api' })).toBe(false);
    expect(byInteger?.({ service: 7 })).toBe(true);
  });

  it('keeps at most `max` validators, dropping the one used longest ago; Ajv keeps none of them', () => {
    const validators = new InputValidators(2);
    const deploy = validators.for(deploySchema());
    validators.for(numbered(1));
    expect(validators.for(deploySchema())).toBe(deploy); // used again: now the newest
    validators.for(numbered(2)); // drops numbered(1), the oldest in use
    expect(validators.size).toBe(2);
    expect(validators.for(deploySchema())).toBe(deploy);
    validators.for(numbered(3));
    validators.for(numbered(4)); // drops deploy
    expect(validators.size).toBe(2);
    // Compiled again after it was dropped: Ajv had let go of its $id, so it compiles.
    const again = validators.for(deploySchema());
    expect(again).toBeDefined();
    expect(again).not.toBe(deploy);
    const args: Record<string, unknown> = { service: 'api' };
    expect(again?.(args)).toBe(true);
    expect(args.region).toBe('eu-1');
  });

  it('a schema Ajv cannot compile gives no validator, and takes nothing from the others', () => {
    const validators = new InputValidators();
    // Its $id is the 2020-12 meta-schema's: Ajv refuses it, and must keep the meta-schema.
    const squatting = {
      $id: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
    } as unknown as Schema;
    expect(validators.for(squatting)).toBeUndefined();
    expect(
      validators.for({ type: 'object', properties: { a: { $ref: '#/nowhere' } } } as Schema),
    ).toBeUndefined();
    // Only the meta-schema refuses a title that is not a string: it is still there.
    expect(validators.for({ type: 'object', title: 5 } as unknown as Schema)).toBeUndefined();
    const validate = validators.for(numbered(1));
    expect(validate?.({ p1: 1 })).toBe(true);
    expect(validate?.({ p1: 'x' })).toBe(false);
  });

  it('a draft-07 schema compiles: $schema is not what decides', () => {
    const validate = new InputValidators().for({
      $schema: 'http://json-schema.org/draft-07/schema#',
      ...numbered(1),
    } as Schema);
    expect(validate?.({ p1: 2 })).toBe(true);
  });
});
