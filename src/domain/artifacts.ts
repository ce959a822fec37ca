import { AgentError } from './errors';

/**
 * Stored artifact bytes no longer match the SHA-256 recorded when they were written (plan §18.4,
 * §28.4: "verify exported artifacts by SHA-256 on the way out"), or the stored file is gone.
 * Never names a storage path.
 */
export class ArtifactIntegrityError extends AgentError {
  readonly code = 'artifact_integrity_error';
}

/** The store could not write or read bytes for a reason other than integrity (disk full, permissions). */
export class ArtifactStorageError extends AgentError {
  readonly code = 'artifact_storage_error';
}

/** `source` values the platform itself writes (plan §18 origin vocabulary); other producers add their own. */
export const ARTIFACT_SOURCES = {
  export: 'artifact.export',
  toolResult: 'tool_result',
} as const;

/** A display name is a base name: no separators, no NUL, not `.`/`..`, at most 255 characters. */
export function isValidArtifactName(name: string): boolean {
  if (name.length === 0 || name.length > 255 || name === '.' || name === '..') return false;
  if (name.includes('/') || name.includes('\\')) return false;
  // No NUL or other control characters (they would end up in Content-Disposition headers).
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

/** `type/subtype` with optional parameters, as HTTP Content-Type accepts it. */
export const MEDIA_TYPE_PATTERN =
  /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(;[ -~]{0,200})?$/i;

/** A media type for a file name, by extension; `application/octet-stream` when unknown. */
export function mediaTypeForName(name: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  return MEDIA_TYPES[ext] ?? 'application/octet-stream';
}

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain; charset=utf-8',
  log: 'text/plain; charset=utf-8',
  md: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  html: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  py: 'text/x-python',
  js: 'text/javascript',
  ts: 'text/plain; charset=utf-8',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
};
