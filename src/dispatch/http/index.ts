export {
  type AllowedTargets,
  checkUrl,
  type PinnedAddress,
  pinAddress,
  type ResolveHost,
  refusedRange,
} from './address-guard.js';
export { HttpChannel, type HttpChannelOptions } from './http-channel.js';
export { statusOutcome } from './outcome.js';
export {
  type HttpToolSpec,
  type HttpToolSpecInput,
  HttpToolSpecSchema,
  HttpToolsConfigSchema,
} from './spec.js';
export { allowedTargets } from './targets.js';
export { httpActionTool } from './tool.js';
