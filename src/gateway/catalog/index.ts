// The tools a gateway publishes: the catalog (catalog.ts) of the upstreams' tools and its own, by the
// config's naming rule (tool-names.ts), each with its contract (contract-check.ts, tool-overrides.ts) and
// its validator (input-validators.ts); the action tools (action-tools.ts) and declared status probes.
export { checkedActionTools, closeActionTools } from './action-tools.js';
export { type CatalogEntry, CautiousDefaultNotices, ToolCatalog } from './catalog.js';
export { declaredProbe } from './status-probe.js';
export { ToolNameGuard } from './tool-names.js';
export { ToolOverrides } from './tool-overrides.js';
