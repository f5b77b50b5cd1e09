// Tools report cancellation with the reason the signal carried (pause, shutdown, deadline).

/** The abort reason of `signal` as text (an Error's message, else the value). */
export function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : String(reason ?? 'aborted');
}
