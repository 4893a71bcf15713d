import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { ToolContract } from '../contracts/contract.js';
import type { HttpToolSpecInput } from '../dispatch/http/index.js';
import type { DispatchContext } from '../executions/call.js';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What an idempotent handler gets besides its arguments. */
export interface IdemToolExtra extends ToolExtra {
  idem: DispatchContext;
}

export type ZodShape = Record<string, z.ZodType>;

export interface IdemToolConfig<Shape extends ZodShape> {
  title?: string;
  description?: string;
  inputSchema: Shape;
  outputSchema?: ZodShape;
  annotations?: ToolAnnotations;
  /** How a lost response is recovered (docs/contracts.md). Omitted: the cautious defaults. */
  contract?: ToolContract;
}

/** An HTTP action tool in code: the arguments as a zod shape, the request as the gateway's `http_tools:` spec. */
export interface IdemHttpToolConfig<Shape extends ZodShape> extends Omit<IdemToolConfig<Shape>, 'contract'> {
  description: string;
  contract?: NonNullable<HttpToolSpecInput['contract']>;
  /** Method, URL template, headers, body, credential, allow, timeout… (docs/channels-http.md). */
  http: Omit<HttpToolSpecInput, 'description' | 'input_schema' | 'contract'>;
}

export type IdemToolHandler<Shape extends ZodShape> = (
  args: z.output<z.ZodObject<Shape>>,
  extra: IdemToolExtra,
) => CallToolResult | Promise<CallToolResult>;
