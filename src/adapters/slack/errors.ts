// Slack's Web API errors in the outbox's terms: a rate limit carries its Retry-After, an error that
// trying again cannot change is permanent, anything else may pass.
import { webApi } from '@slack/bolt';
import { PlatformError } from '../../core/errors.js';
import { PermanentPlatformError } from '../chat/outbox-sender.js';

/** Slack errors that will not go away by trying again. */
const permanentErrors = new Set([
  'channel_not_found', 'not_in_channel', 'is_archived', 'msg_too_long', 'no_text', 'invalid_blocks', 'invalid_arguments',
  'message_not_found', 'cant_update_message', 'edit_window_closed', 'invalid_auth', 'not_authed', 'account_inactive',
  'token_revoked', 'missing_scope', 'restricted_action', 'thread_not_found', 'invalid_metadata_format', 'msg_blocks_too_long',
]);

/** Maps a Web API client error to PlatformError (message = Slack's error code). */
export function toPlatformError(method: string, error: unknown): PlatformError {
  if (error instanceof Error && 'code' in error) {
    switch (error.code) {
      case webApi.ErrorCode.RateLimitedError: {
        const seconds = 'retryAfter' in error && typeof error.retryAfter === 'number' ? error.retryAfter : 1;
        return new PlatformError('slack', method, 'ratelimited', seconds * 1000, { cause: error });
      }
      case webApi.ErrorCode.PlatformError: {
        const code = platformErrorCode(error) ?? 'unknown_error';
        const ErrorClass = permanentErrors.has(code) ? PermanentPlatformError : PlatformError;
        return new ErrorClass('slack', method, code, undefined, { cause: error });
      }
      default:
        break;
    }
  }
  return new PlatformError('slack', method, error instanceof Error ? error.message : String(error), undefined, { cause: error });
}

/** Slack's error code of a platform error (e.g. "not_allowed"), else null. */
export function platformErrorCode(error: unknown): string | null {
  if (!(error instanceof Error) || !('code' in error) || error.code !== webApi.ErrorCode.PlatformError) return null;
  const data = 'data' in error ? error.data : undefined;
  const code = typeof data === 'object' && data !== null && 'error' in data ? data.error : undefined;
  return typeof code === 'string' ? code : 'unknown_error';
}
