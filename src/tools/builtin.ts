import type { Tool } from '../ports/tool';
import { createCalculatorTool } from './math/calculator-tool';
import { createCurrentTimeTool } from './system/current-time';

/** The tools every deployment ships: pure, read-only, and safe to run in parallel. */
export function createBuiltinTools(): Tool[] {
  return [createCalculatorTool(), createCurrentTimeTool()];
}
