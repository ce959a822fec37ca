import { CreateSessionHandler } from './sessions/create-session';
import { CancelRunHandler } from './runs/cancel-run';
import { GetRunHandler, ListRunEventsHandler } from './runs/queries';
import { SubmitMessageHandler } from './runs/submit-message';

/** Every CQRS handler, registered by the application module. */
export const APPLICATION_HANDLERS = [CreateSessionHandler, SubmitMessageHandler, CancelRunHandler, GetRunHandler, ListRunEventsHandler];
