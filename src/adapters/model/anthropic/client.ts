import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import type { ProviderProfile } from '../../../domain/model/provider-profile';
import { errorMessage, otherErrorInfo, type SdkErrorInfo } from '../shared/failures';

/**
 * The one place the `@anthropic-ai/sdk` client is constructed. The 1.x client would otherwise read
 * ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN / profile files from the environment and send the key
 * as `Authorization: Bearer`; everything is passed explicitly, retries are off (the gateway owns
 * the attempt loop), the SDK logger is off, and its OpenTelemetry spans (which may carry content)
 * are disabled.
 */
export function createAnthropicClient(profile: ProviderProfile, apiKey: string): Anthropic {
  return new Anthropic({
    apiKey,
    baseURL: profile.baseUrl,
    webhookKey: null,
    maxRetries: 0,
    timeout: profile.timeoutMs,
    logLevel: 'off',
    openTelemetry: false,
  });
}

/** Describes an error thrown by the Anthropic SDK in provider-neutral terms. */
export function anthropicErrorInfo(error: unknown): SdkErrorInfo {
  if (error instanceof APIUserAbortError) return { message: 'aborted', aborted: true };
  if (error instanceof APIConnectionTimeoutError) return { message: error.message, timeout: true };
  if (error instanceof APIConnectionError) return { message: errorMessage(error), connection: true };
  if (error instanceof APIError) {
    const body = (error.error ?? {}) as { error?: { type?: unknown; message?: unknown } };
    const type = error.type ?? (typeof body.error?.type === 'string' ? body.error.type : null);
    const message = error.apiMessage ?? (typeof body.error?.message === 'string' ? body.error.message : error.message);
    if (typeof error.status === 'number')
      return { status: error.status, headers: (error.headers as Headers | undefined) ?? null, code: type, message };
    return { code: type, message };
  }
  return otherErrorInfo(error);
}
