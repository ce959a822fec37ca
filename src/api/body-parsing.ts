import { findUnstorableText } from '../domain/events/storable-text';
import { ValidationError } from '../domain/errors';
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

/** Bounds on a JSON document's shape (ADR 0041), checked on the raw bytes before `JSON.parse` runs. */
export const JSON_LIMITS = { maxDepth: 64, maxElements: 10_000 } as const;

/** Thrown from the parser's `verify` hook; `type` lets the error middleware name the limit. */
class JsonShapeError extends Error {
  readonly status = 400;
  constructor(
    readonly type: 'entity.too.deep' | 'entity.too.many.elements',
    readonly limit: number,
  ) {
    super(type);
  }
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * One pass over the raw bytes, outside strings: the nesting depth and the number of array elements
 * and object members (separators plus containers bound it). Refuses at the first byte past a limit,
 * so a 5,000-deep body costs microseconds and never reaches the parser's recursion.
 */
export function checkJsonShape(buf: Buffer, limits: { maxDepth: number; maxElements: number } = JSON_LIMITS): void {
  let depth = 0;
  let elements = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limits.maxDepth) throw new JsonShapeError('entity.too.deep', limits.maxDepth);
      if (++elements > limits.maxElements) throw new JsonShapeError('entity.too.many.elements', limits.maxElements);
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    else if (c === COMMA && ++elements > limits.maxElements)
      throw new JsonShapeError('entity.too.many.elements', limits.maxElements);
  }
}

/** Options for the JSON body parser, installed between the two middlewares below. */
export function jsonParserOptions(limitBytes: number): {
  limit: number;
  strict: boolean;
  type: string;
  verify: (req: unknown, res: unknown, buf: Buffer) => void;
} {
  return { limit: limitBytes, strict: true, type: 'application/json', verify: (_q, _s, buf) => checkJsonShape(buf) };
}

function pathSegments(req: ApiRequest): string[] {
  return String((req as { path?: string }).path ?? '')
    .split('/')
    .map((seg) => {
      try {
        return decodeURIComponent(seg);
      } catch {
        return seg; // not percent-decodable: the router answers it; nothing unstorable came from it
      }
    });
}

/**
 * After the parser: a body or query string holding text PostgreSQL cannot store (a NUL, a lone
 * surrogate) is a 400 `validation_error` naming the field, before any handler sees it (ADR 0041).
 */
export function unstorableTextCheck(log?: Logger): Middleware {
  return (req, res, next) => {
    const where: [string, unknown][] = [
      ['', (req as { body?: unknown }).body],
      ['', (req as { query?: unknown }).query],
      // Name parameters (MCP servers, agents) reach SQL as text; ids are UUID-checked later anyway.
      ['path', pathSegments(req)],
    ];
    for (const [prefix, value] of where) {
      const hit = findUnstorableText(value, prefix);
      if (hit) {
        const message = `${hit.field}: ${hit.problem}`;
        return sendError(
          res,
          req,
          new ValidationError(message, { field: hit.field, fields: [{ field: hit.field, problems: [hit.problem] }] }),
          log,
        );
      }
    }
    next();
  };
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
    if (e?.type === 'entity.too.deep' || e?.type === 'entity.too.many.elements') {
      const deep = e.type === 'entity.too.deep';
      const limit = (err as JsonShapeError).limit;
      const message = deep
        ? `request body nests deeper than the limit of ${limit} arrays/objects`
        : `request body holds more than the limit of ${limit} array elements and object members`;
      return sendError(
        res,
        req,
        new ValidationError(
          message,
          deep ? { field: '(body)', maxDepth: limit } : { field: '(body)', maxElements: limit },
        ),
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
