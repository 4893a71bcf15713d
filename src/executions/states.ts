/** Execution states live with the record that carries them, below the engine (store/states.ts). */
export {
  EXECUTION_STATES,
  type ExecutionState,
  FINISHED,
  isExecutionState,
  NOT_YET_DISPATCHED,
} from '../store/states.js';
