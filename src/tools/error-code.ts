// The one test for a Node system error by its code, shared by the workspace, quota and disk files.

/** True when `error` is a Node system error with the given code (e.g. ENOENT). */
export function isErrorCode(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
