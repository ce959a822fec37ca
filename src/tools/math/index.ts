export { CALC_REASONS, type CalcReason } from './calc-reason';
export { createCalculatorTool } from './calculator-tool';
export { evaluateExpression, type CalcOutcome } from './evaluate-expression';
export { CALC_LIMITS } from './limits';
