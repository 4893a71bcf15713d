/** Execution states live below the store and the engine (journal/states.ts): the journal records them, the store carries them. */
export {
  EXECUTION_STATES,
  type ExecutionState,
  FINISHED,
  isExecutionState,
  NOT_YET_DISPATCHED,
} from '../journal/states.js';
