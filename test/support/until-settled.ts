import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect, vi } from 'vitest';
import { idemCodeOf } from '../../src/executions/answers.js';
import { PATIENTLY } from './wait.js';

/**
 * The first answer that is not IDEM_IN_FLIGHT, asking again meanwhile: a dead
 * holder's lease runs out by the store's clock, later on a loaded machine but
 * no differently. The wait's cap is for a hung run, not a guess at the lease.
 */
export async function askUntilSettled(
  ask: () => Promise<CallToolResult>,
  options: { timeout?: number; interval?: number } = {},
): Promise<CallToolResult> {
  return vi.waitFor(
    async () => {
      const answer = await ask();
      expect(idemCodeOf(answer)).not.toBe('IDEM_IN_FLIGHT');
      return answer;
    },
    { ...PATIENTLY, ...options },
  );
}
