import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { AgentError } from '../domain/errors';

const STATUS: Record<string, number> = {
  validation_error: 400,
  invalid_event_payload: 400,
  unknown_event_type: 400,
  secret_in_payload: 400,
  authentication_error: 401,
  authorization_error: 403,
  not_found: 404,
  conflict: 409,
  concurrency_conflict: 409,
  invalid_state_transition: 409,
};

interface JsonResponse {
  status(code: number): JsonResponse;
  json(body: unknown): void;
}

/**
 * The one place errors become the documented envelope `{ error: { code, message, details } }`.
 * Unknown errors are a 500 with no stack trace (tracebacks are never exposed).
 */
@Catch()
export class AgentErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<JsonResponse>();
    if (exception instanceof AgentError) {
      res.status(STATUS[exception.code] ?? 500).json({ error: { code: exception.code, message: exception.message, details: exception.details } });
      return;
    }
    if (exception instanceof HttpException) {
      const body = exception.getResponse();
      const status = exception.getStatus();
      if (typeof body === 'object' && body !== null && 'error' in body && typeof (body).error === 'object') {
        res.status(status).json(body);
        return;
      }
      const raw = typeof body === 'string' ? body : (body as { message?: unknown }).message;
      const message = Array.isArray(raw) ? raw.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('; ') : typeof raw === 'string' ? raw : exception.message;
      res.status(status).json({ error: { code: status === 404 ? 'not_found' : status === 400 ? 'validation_error' : 'http_error', message, details: {} } });
      return;
    }
    res.status(500).json({ error: { code: 'internal_error', message: 'internal error', details: {} } });
  }
}
