import type { JsonValue } from './canonical.js';

/**
 * Argument paths are dot-separated member names; `*` matches every member of
 * an object or every element of an array: `card.number`, `items.*.token`.
 */
export type ArgumentPath = string;

export interface ArgumentRules {
  /** Arguments that do not change the effect (a trace id, a comment): removed before fingerprinting. */
  ignore: readonly ArgumentPath[];
  /** Secret arguments: digested before fingerprinting, never stored, logged or echoed. */
  secrets: readonly ArgumentPath[];
  /** Filled in when absent, so that "omitted" and "given the default" are one intent. */
  defaults: Readonly<Record<string, JsonValue>>;
}

export const NO_ARGUMENT_RULES: ArgumentRules = Object.freeze({ ignore: [], secrets: [], defaults: {} });
