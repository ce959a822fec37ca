export { createDemoProvider, DEMO_PROVIDER_NAME, type DemoProviderOptions } from './demo-provider';
export { decideDemoReply, CALCULATOR_TOOL, CLOCK_TOOL, type DemoDecision, type DemoRule } from './demo-rules';
export { extractArithmeticExpression } from './arithmetic-question';
export { parseTimeQuestion, type TimeQuestion } from './time-question';
