import { CreateSessionHandler } from './sessions/create-session';
import { CancelRunHandler } from './runs/cancel-run';
import { GetApprovalHandler, GetRunHandler, ListApprovalsHandler, ListRunEventsHandler } from './runs/queries';
import { SubmitMessageHandler } from './runs/submit-message';
import { ResolveApprovalHandler, ReviewUncertainInvocationHandler } from './approvals/commands';
import { ProvideRunInputHandler } from './runs/provide-input';
import { DeleteSessionHandler } from './sessions/delete-session';
import {
  CountActiveRunsHandler,
  FindSubmissionHandler,
  GetSessionHandler,
  ListMessagesHandler,
  ListSessionsHandler,
} from './sessions/queries';

/** Every CQRS handler, registered by the application module. */
export const APPLICATION_HANDLERS = [
  CreateSessionHandler,
  SubmitMessageHandler,
  CancelRunHandler,
  GetRunHandler,
  ListRunEventsHandler,
  // HTTP API (sessions, transcript, approvals read side)
  ListSessionsHandler,
  GetSessionHandler,
  DeleteSessionHandler,
  ListMessagesHandler,
  CountActiveRunsHandler,
  ListApprovalsHandler,
  GetApprovalHandler,
  FindSubmissionHandler,
  // Tool lifecycle (approvals, uncertainty reviews, WAITING_FOR_USER input)
  ResolveApprovalHandler,
  ReviewUncertainInvocationHandler,
  ProvideRunInputHandler,
];
