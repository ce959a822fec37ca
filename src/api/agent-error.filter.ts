import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Logger } from '../ports/logger';
import { toErrorResponse } from './error-envelope';
import { requestIdOf, type ApiRequest, type ApiResponse } from './request-context';

/**
 * The one place errors become the documented envelope
 * `{ error: { code, message, details, request_id } }` (mapping in error-envelope.ts).
 * Unknown errors are a 500 with no stack trace; the log keeps the detail, keyed by request id.
 */
@Catch()
export class AgentErrorFilter implements ExceptionFilter {
  constructor(private readonly log?: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<ApiRequest>();
    const res = http.getResponse<ApiResponse>();
    sendError(res, req, exception, this.log);
  }
}

/** Writes the envelope for `exception` (also used by the body-parsing middleware). */
export function sendError(res: ApiResponse, req: ApiRequest | undefined, exception: unknown, log?: Logger): void {
  const r = toErrorResponse(exception, requestIdOf(req));
  if (r.status >= 500) {
    log?.error('request failed', {
      requestId: r.body.error.request_id,
      clientRequestId: req?.clientRequestId,
      method: req?.method,
      url: req?.url,
      error: exception instanceof Error ? `${exception.name}: ${exception.message}` : String(exception),
    });
  }
  if (res.headersSent) return; // a stream already started: nothing more can be said on it
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  res.status(r.status).json(r.body);
}
