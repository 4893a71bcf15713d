export {
  type AllowedTargets,
  checkUrl,
  type PinnedAddress,
  pinAddress,
  type ResolveHost,
  refusedRange,
} from './address-guard.js';
export { allowedTargets, HttpChannel, type HttpChannelOptions } from './http-channel.js';
export { statusOutcome } from './outcome.js';
export {
  type HttpToolSpec,
  type HttpToolSpecInput,
  HttpToolSpecSchema,
  HttpToolsConfigSchema,
} from './spec.js';
export { httpActionTool } from './tool.js';
