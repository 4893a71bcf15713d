/**
 * The fixture's resources (static, a template, one to subscribe to, with the
 * tool that announces its update) and prompts (one of which asks for input).
 */
import { completable, inputRequired, type McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { done, RED_PIXEL_PNG, text } from './content.js';
import { answered, askText } from './fixture-input-required.js';
import type { FixtureState } from './fixture-state.js';

export function registerResources(server: McpServer, state: FixtureState): void {
  server.registerResource(
    'static-text',
    'test://static-text',
    {
      description: 'A static text resource',
      mimeType: 'text/plain',
      cacheHint: { ttlMs: 300_000, cacheScope: 'public' },
    },
    async (uri) => ({
      contents: [
        { uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A static binary resource (a PNG image)', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: RED_PIXEL_PNG }] }),
  );
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', {
      list: undefined,
      complete: { id: (value) => ['123', '456', '789'].filter((id) => id.startsWith(value)) },
    }),
    { description: 'A resource template whose {id} is substituted', mimeType: 'application/json' },
    async (uri, { id }) => {
      const value = Array.isArray(id) ? id.join(',') : String(id);
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: 'application/json',
            text: JSON.stringify({ id: value, templateTest: true, data: `Data for ID: ${value}` }),
          },
        ],
      };
    },
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource that can be subscribed to', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }],
    }),
  );

  server.server.setRequestHandler('resources/subscribe', async (request) => {
    state.subscriptions.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    state.subscriptions.delete(request.params.uri);
    return {};
  });
  server.registerTool(
    'touch_resource',
    {
      description: 'Sends notifications/resources/updated for a subscribed resource (for forwarding tests).',
      inputSchema: z.object({ uri: z.string().default('test://watched-resource') }),
    },
    async ({ uri }, ctx) => {
      const subscribed = state.subscriptions.has(uri);
      if (subscribed) await ctx.mcpReq.notify({ method: 'notifications/resources/updated', params: { uri } });
      state.notifier?.resourceUpdated(uri);
      return done(subscribed ? `notified ${uri}` : `not subscribed: ${uri}`);
    },
  );
}

export function registerPrompts(server: McpServer): void {
  server.registerPrompt(
    'test_simple_prompt',
    { description: 'A simple prompt without arguments' },
    async () => ({
      messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two required arguments',
      argsSchema: z.object({
        arg1: completable(z.string().describe('First test argument'), (value) =>
          ['paris', 'park', 'party', 'test', 'testing'].filter((word) => word.startsWith(value)),
        ),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt that embeds a resource',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: text('Please process the embedded resource above.') },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_image',
    { description: 'A prompt with image content' },
    async () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' } },
        { role: 'user', content: text('Please analyze the image above.') },
      ],
    }),
  );
  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'MRTR: a prompt that asks for context by elicitation' },
    async (ctx) => {
      const context = answered(ctx, 'user_context', 'context');
      if (context === undefined)
        return inputRequired({
          inputRequests: { user_context: askText('What context should the prompt use?', 'context') },
        });
      return { messages: [{ role: 'user', content: text(`Prompt with context: ${context}`) }] };
    },
  );
}
