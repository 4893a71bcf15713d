// The runtime's face: what the gateway and the library build (runtime.ts).
export { type ReceiptScope, Runtime, type RuntimeOptions } from './runtime.js';
