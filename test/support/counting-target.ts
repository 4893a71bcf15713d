import type { DispatchContext } from '../../src/executions/call.js';
import type { ToolResult } from '../../src/store/outcome.js';
import { sleep } from './wait.js';

/**
 * The far side of the boundary, for tests: it only counts what arrived (and
 * can be slow, fail, or hang). "Executed once" is asserted on its counter.
 */
export class CountingTarget {
  invocations = 0;
  readonly keys: (string | null)[] = [];
  readonly redispatches: boolean[] = [];

  constructor(
    readonly options: {
      delayMs?: number;
      respond?: (n: number, ctx: DispatchContext) => ToolResult | Promise<ToolResult>;
    } = {},
  ) {}

  readonly dispatch = async (ctx: DispatchContext): Promise<ToolResult> => {
    const n = ++this.invocations;
    this.keys.push(ctx.executionId);
    this.redispatches.push(ctx.redispatch);
    if (this.options.delayMs) await sleep(this.options.delayMs);
    if (this.options.respond) return this.options.respond(n, ctx);
    return { content: [{ type: 'text', text: `done #${n}` }], structuredContent: { n } };
  };
}
