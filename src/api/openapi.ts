import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { STATUS_BY_CODE } from './error-envelope';

/** `error` of the envelope every error response carries (docs/api.md "Errors"). */
export class ApiErrorBody {
  @ApiProperty({ description: 'Machine-readable error code (snake_case)', example: 'validation_error' })
  code!: string;

  @ApiProperty({ description: 'What went wrong, for people' })
  message!: string;

  @ApiProperty({
    description: 'Structured facts about the error; keys are snake_case',
    type: 'object',
    additionalProperties: true,
  })
  details!: Record<string, unknown>;

  @ApiProperty({ description: 'The X-Request-Id of the response, under which the server logged the error' })
  request_id!: string;
}

export class ApiErrorEnvelope {
  @ApiProperty({ type: ApiErrorBody })
  error!: ApiErrorBody;
}

/** The status codes an error response may have (the envelope's code decides it: error-envelope.ts). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 503;

/** The codes behind each status, named in the document. */
function codesOf(status: ErrorStatus): string {
  const codes = Object.entries(STATUS_BY_CODE)
    .filter(([, s]) => s === status)
    .map(([c]) => c);
  return status === 500 ? ['internal_error', ...codes].join(', ') : codes.join(', ');
}

const WHY: Readonly<Record<ErrorStatus, string>> = {
  400: 'The request is invalid (a field, a UUID, a query parameter, Last-Event-ID, a cursor, or JSON that does not parse)',
  401: 'No valid credentials (AUTH_MODE=token: a bearer token from AUTH_TOKENS_FILE; AUTH_MODE=dev: loopback only)',
  403: 'The principal lacks the scope this route requires (details.required_scope)',
  404: "No such resource, or another tenant's or principal's",
  409: 'The resource is not in a state that allows this',
  413: 'The body is larger than API_BODY_LIMIT_BYTES',
  415: 'The body is not application/json',
  429: "Too many requests for the tenant, or the tenant's concurrent-run ceiling (Retry-After)",
  500: 'A server-side fault; details only in the log, under the request id',
  503: 'Not ready: the database is unreachable or migrations are not at head',
};

/** Error responses of a route, each with the error envelope (`{"error": {code, message, details, request_id}}`). */
export function ApiErrors(...statuses: ErrorStatus[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ApiErrorEnvelope),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: `${WHY[status]} (error codes: ${codesOf(status)})`,
        // Always JSON, also on routes that produce an event stream or bytes when they succeed.
        content: { 'application/json': { schema: { $ref: getSchemaPath(ApiErrorEnvelope) } } },
      }),
    ),
  );
}

/**
 * A success response. Declared on every route: once a route has any documented response Nest's
 * swagger module no longer adds its default one, so the success code is always stated (and a test
 * checks it against the status Nest answers with).
 */
export function ApiSuccess(
  status: 200 | 201 | 202 | 204 | 304,
  description: string,
  opts: { contentType?: string } = {},
): MethodDecorator {
  if (status === 204 || status === 304) return ApiResponse({ status, description });
  const schema = opts.contentType === 'text/event-stream' ? { type: 'string' as const } : { type: 'object' as const };
  return ApiResponse({
    status,
    description,
    ...(opts.contentType && opts.contentType !== 'application/json'
      ? {
          content: {
            [opts.contentType]: {
              schema:
                opts.contentType === 'application/octet-stream'
                  ? { type: 'string' as const, format: 'binary' }
                  : schema,
            },
          },
        }
      : { schema }),
  });
}
