import type { Logger } from '../ports/logger';
import { sendError } from './agent-error.filter';
import { MalformedRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from './errors';
import type { ApiRequest, ApiResponse } from './request-context';

type Next = (err?: unknown) => void;
type Middleware = (req: ApiRequest, res: ApiResponse, next: Next) => void;
type ErrorMiddleware = (err: unknown, req: ApiRequest, res: ApiResponse, next: Next) => void;

function hasBody(req: ApiRequest): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (typeof len === 'string' && len !== '0');
}

/** Options for the JSON body parser, installed between the two middlewares below. */
export function jsonParserOptions(limitBytes: number): { limit: number; strict: boolean; type: string } {
  return { limit: limitBytes, strict: true, type: 'application/json' };
}

/**
 * JSON bodies only, at most `limitBytes`: 415 for another media type (before parsing), then after
 * the parser 413 above the limit and 400 for JSON that does not parse. Errors become the same
 * envelope as every other error.
 */
export function bodyParsing(limitBytes: number, log?: Logger): { before: Middleware; after: ErrorMiddleware } {
  const mediaType: Middleware = (req, res, next) => {
    if (!hasBody(req)) return next();
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    if (type !== 'application/json') {
      return sendError(
        res,
        req,
        new UnsupportedMediaTypeError(
          `request bodies must be application/json, got ${type === '' ? 'no content type' : `"${type}"`}`,
          { contentType: type },
        ),
        log,
      );
    }
    next();
  };
  const errors: ErrorMiddleware = (err, req, res, next) => {
    const e = err as { type?: string; status?: number; limit?: number; length?: number } | null;
    if (e?.type === 'entity.too.large' || e?.status === 413) {
      return sendError(
        res,
        req,
        new PayloadTooLargeError(`request body exceeds the ${limitBytes}-byte limit`, { limitBytes }),
        log,
      );
    }
    if (e?.type === 'entity.parse.failed')
      return sendError(res, req, new MalformedRequestError('request body is not valid JSON', {}), log);
    if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      return sendError(
        res,
        req,
        new MalformedRequestError('request body could not be read', { reason: e.type ?? null }),
        log,
      );
    }
    next(err);
  };
  return { before: mediaType, after: errors };
}
