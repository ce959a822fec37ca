import type { ToolCallOutcome } from './types';

type Suspend = Extract<ToolCallOutcome, { kind: 'suspend' }>;

/** What a program's first bridged call that must wait for a human leaves for its parent's pass. */
export interface HeldCall {
  readonly invocationId: string;
  /** The approval (or UNCERTAIN review) the run waits on. */
  readonly approvalId: string;
  readonly suspension: Suspend;
}

/**
 * A `sandbox.run_program` pass's pause for a human (plan §8.5, docs/sandbox.md): the first bridged
 * call that must wait for an approval (or a review) holds it, which aborts the program — a program
 * cannot wait hours for a human — and the parent's pass then suspends the run on that approval
 * instead of recording a result. After the decision the program runs again from the start.
 */
export class BridgeHold {
  private readonly controller = new AbortController();
  private held: HeldCall | null = null;

  /** Aborted once a call is held: the program is stopped. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get call(): HeldCall | null {
    return this.held;
  }

  hold(call: HeldCall): void {
    if (this.held) return;
    this.held = call;
    this.controller.abort(new Error(`a bridged call (${call.invocationId}) waits for a human`));
  }
}
