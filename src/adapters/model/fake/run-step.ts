import type { ModelRequest } from '../../../domain/model/model-events';

/** The request metadata key carrying the 1-based run step of a model call. */
export const STEP_METADATA_KEY = 'step';

/**
 * The run step a model call belongs to (1-based): `request.metadata.step` when present. Without it
 * the step is derived from the conversation - one plus the number of tool-call batches after the
 * latest user message - so a caller that forgets the metadata still gets the right turn.
 * Returns null when the metadata is present but not a positive integer (a caller bug).
 */
export function runStepOf(request: ModelRequest): number | null {
  const declared = request.metadata[STEP_METADATA_KEY];
  if (declared !== undefined) {
    return /^[1-9][0-9]*$/.test(declared) ? Number(declared) : null;
  }
  let lastUser = -1;
  request.conversation.forEach((item, i) => {
    if (item.kind === 'user') lastUser = i;
  });
  let batches = 0;
  let previousWasCall = false;
  for (const item of request.conversation.slice(lastUser + 1)) {
    const isCall = item.kind === 'tool_call';
    if (isCall && !previousWasCall) batches += 1;
    previousWasCall = isCall;
  }
  return batches + 1;
}
