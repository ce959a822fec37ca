export { createFakeProvider, FAKE_PROVIDER_NAME, type FakeProviderOptions } from './fake-provider';
export type { FakeFixture, FakeTurn, FakeToolCall, FakeFailure, FakeUsage } from './fixture';
export { listFixtures, loadFixture } from './fixture-loader';
export { STEP_METADATA_KEY, runStepOf } from './run-step';
