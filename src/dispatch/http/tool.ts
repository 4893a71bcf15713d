import type { ActionTool } from '../channel.js';
import { HttpChannel, type HttpChannelOptions } from './http-channel.js';
import { type HttpToolSpecInput, HttpToolSpecSchema } from './spec.js';

/** An HTTP action tool from its spec (as under `http_tools:`), its channel ready to dispatch. */
export function httpActionTool(
  name: string,
  spec: HttpToolSpecInput,
  options: HttpChannelOptions,
): ActionTool & { channel: HttpChannel } {
  const parsed = HttpToolSpecSchema.parse(spec);
  return {
    name,
    description: parsed.description,
    inputSchema: { ...parsed.input_schema, type: 'object' } as ActionTool['inputSchema'],
    contract: parsed.contract,
    channel: new HttpChannel(name, parsed, options),
  };
}
