/** The stored outcome lives with the record that carries it, below the engine (store/outcome.ts). */
export type { StoredOutcome, ToolResult } from '../store/outcome.js';
