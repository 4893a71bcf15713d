export { type HttpToolsFromEntry, HttpToolsFromSchema } from './config.js';
export { LARGE_IMPORT, openApiDraft } from './draft.js';
export {
  configWithImports,
  type ImportedTool,
  importHttpTools,
  importLines,
  type OpenApiImport,
} from './import.js';
export type { SkippedOperation } from './operations.js';
