import type { ToolResult } from '../store/outcome.js';
import type { Dispatch, ToolCall } from './call.js';

/**
 * What the engine calls around each side-effecting call — its one answer
 * path — so that metrics and traces (src/metrics) see every answer once,
 * without the engine knowing of Prometheus or OpenTelemetry. `run` performs
 * the call with the dispatch it is given (the observer may wrap it).
 */
export interface CallObserver {
  observe(
    call: ToolCall,
    dispatch: Dispatch,
    run: (dispatch: Dispatch) => Promise<ToolResult>,
  ): Promise<ToolResult>;
}
