import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ProviderProfile } from '../../../domain/model/provider-profile';
import { errorMessage, otherErrorInfo, type SdkErrorInfo } from '../shared/failures';

/**
 * The one place the `openai` SDK client is constructed (for both the Responses and the
 * chat_completions adapters). Everything the SDK would otherwise pick up from the environment
 * (OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID, ...) is passed explicitly; retries are off
 * because the gateway owns the attempt loop; the SDK logger is off so a malformed chunk (which may
 * hold model text) is never printed.
 */
export function createOpenAIClient(profile: ProviderProfile, apiKey: string): OpenAI {
  return new OpenAI({
    apiKey,
    baseURL: profile.baseUrl,
    organization: null,
    project: null,
    webhookSecret: null,
    adminAPIKey: null,
    maxRetries: 0,
    timeout: profile.timeoutMs,
    logLevel: 'off',
  });
}

/** Describes an error thrown by the `openai` SDK in provider-neutral terms. */
export function openAIErrorInfo(error: unknown): SdkErrorInfo {
  if (error instanceof APIUserAbortError) return { message: 'aborted', aborted: true };
  if (error instanceof APIConnectionTimeoutError) return { message: error.message, timeout: true };
  if (error instanceof APIConnectionError) return { message: errorMessage(error), connection: true };
  if (error instanceof APIError) {
    const body = (error.error ?? {}) as { code?: unknown; type?: unknown; message?: unknown };
    const code = typeof body.code === 'string' ? body.code : typeof body.type === 'string' ? body.type : null;
    const message = typeof body.message === 'string' ? body.message : error.message;
    if (typeof error.status === 'number')
      return { status: error.status, headers: (error.headers as Headers | undefined) ?? null, code, message };
    // An error object inside the SSE stream (no HTTP status): a numeric `code` is an upstream status.
    const numeric = typeof body.code === 'number' ? body.code : null;
    if (numeric !== null) return { status: numeric, headers: null, code: `http_${numeric}`, message };
    return { code, message };
  }
  return otherErrorInfo(error);
}
