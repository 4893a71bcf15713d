/**
 * One worker thread of the parallel verifier: takes chunks of a SQLite
 * journal from the shared counter and checks them (verify-range.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type ChunkPlan, checkChunks } from './verify-range.js';

if (parentPort) parentPort.postMessage(checkChunks(workerData as ChunkPlan));
