import { CreateSessionHandler } from './sessions/create-session';
import { ForkSessionHandler } from './sessions/fork-session';
import { CancelRunHandler } from './runs/cancel-run';
import {
  GetApprovalHandler,
  GetRunHandler,
  ListApprovalsHandler,
  ListRunChildrenHandler,
  ListRunEventsHandler,
} from './runs/queries';
import { SubmitMessageHandler } from './runs/submit-message';
import { ResolveApprovalHandler, ReviewUncertainInvocationHandler } from './approvals/commands';
import { ProvideRunInputHandler } from './runs/provide-input';
import { DeleteSessionHandler } from './sessions/delete-session';
import { RenameSessionHandler } from './sessions/rename-session';
import {
  CountActiveRunsHandler,
  FindSubmissionHandler,
  GetForkTreeHandler,
  GetSessionHandler,
  ListMessagesHandler,
  ListSessionsHandler,
} from './sessions/queries';

/** Every CQRS handler, registered by the application module. */
export const APPLICATION_HANDLERS = [
  CreateSessionHandler,
  ForkSessionHandler,
  SubmitMessageHandler,
  CancelRunHandler,
  GetRunHandler,
  ListRunEventsHandler,
  ListRunChildrenHandler,
  // HTTP API (sessions, transcript, approvals read side)
  ListSessionsHandler,
  GetSessionHandler,
  DeleteSessionHandler,
  RenameSessionHandler,
  ListMessagesHandler,
  GetForkTreeHandler,
  CountActiveRunsHandler,
  ListApprovalsHandler,
  GetApprovalHandler,
  FindSubmissionHandler,
  // Tool lifecycle (approvals, uncertainty reviews, WAITING_FOR_USER input)
  ResolveApprovalHandler,
  ReviewUncertainInvocationHandler,
  ProvideRunInputHandler,
];
