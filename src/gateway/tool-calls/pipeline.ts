import type { CatalogEntry } from '../catalog/catalog.js';
import { forward } from '../sessions/forwarding.js';
import type { SessionState } from '../sessions/session-state.js';
import { NO_ANSWER, type ToolCallAnswer } from './answer.js';
import { executeCall } from './engine-call.js';
import type { RevisionHooks } from './revision-hooks.js';
import { checkArguments, type FoundTool, findTool } from './tool-call-checks.js';
import type { ToolCallRequest } from './tool-call-request.js';

/**
 * The tools/call pipeline, in the order a call meets it: the tool it names
 * (or why it cannot be called), a read-only tool of an upstream passed
 * through as it is, the arguments checked, a call that continues an input
 * round handed to it, and every other call executed through the engine
 * (engine-call.ts). It is wrapped in the revision bridge
 * (revision-bridge/bridge.ts), and returns the answer rather than sending it:
 * the proxy core (session.ts) sends every answer of its session.
 */
export async function callTool(
  s: SessionState,
  call: ToolCallRequest,
  bridge: RevisionHooks,
): Promise<ToolCallAnswer> {
  const found = await findTool(s, call);
  if ('refused' in found) return found.refused;
  if (passesThrough(found.entry)) return passThrough(s, call, found);
  const checked = checkArguments(call, found.entry);
  if ('refused' in checked) return checked.refused;
  const continued = bridge.continuing(call, checked.args);
  if (continued) return continued;
  // A tool that requires a task refuses a client that cannot take one, before anything is claimed.
  const task = bridge.taskOf(call, found.entry);
  if ('refused' in task) return task.refused;
  return executeCall(s, call, found, checked.args, bridge, task);
}

/** A read-only tool of an upstream: nothing to identify or record, so it is forwarded as it came. */
function passesThrough(entry: CatalogEntry): boolean {
  return entry.contract.replay === 'read_only' && !entry.action;
}

async function passThrough(
  s: SessionState,
  call: ToolCallRequest,
  found: FoundTool,
): Promise<ToolCallAnswer> {
  const { request } = call;
  const params = { ...request.params, name: found.entry.upstreamName };
  await forward(s, { ...request, params }, found.entry.upstream, found.upstreamHeaders);
  return NO_ANSWER;
}
