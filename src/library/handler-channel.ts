import type { z } from 'zod';
import type { ActionChannel } from '../dispatch/channel.js';
import type { IdemToolHandler, ToolExtra, ZodShape } from './tool-config.js';

/**
 * A tool whose handler is code, as the channel of one call: the effect lands
 * wherever the handler takes it, so what is recorded is this server process
 * (`library`, `local`) and the tool's name. The handler gets the execution id
 * in `extra.idem`, to pass on downstream as its own idempotency key.
 */
export function handlerChannel<Shape extends ZodShape>(
  handler: IdemToolHandler<Shape>,
  extra: ToolExtra,
): ActionChannel {
  return {
    kind: 'library',
    target: 'local',
    credential: null,
    method: 'tools/call',
    // `signal`: the caller's cancel, and once the call is a task its tasks/cancel (action-call.ts).
    dispatch: async (args, { executionId, redispatch, signal }) =>
      handler(args as z.output<z.ZodObject<Shape>>, {
        ...extra,
        signal: signal ?? extra.signal,
        idem: { executionId, redispatch },
      }),
  };
}
