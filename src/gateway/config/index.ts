// The gateway's config: its schema and how it is loaded (config.ts), the sections it is made of, and what
// the CLI reads of it. What the sections become for the parts they configure is specs.ts, the gateway's own.
export {
  configJsonSchema,
  type GatewayConfig,
  GatewayConfigSchema,
  type GatewayDefaultsConfig,
  type GatewayToolContractConfig,
  loadConfig,
} from './config.js';
export { draftConfig } from './draft.js';
export { isLoopbackHost } from './exposure.js';
export { splitHostPort } from './operator.js';
