// R2: when memory runs fire. The step is the usage percent rounded down to a multiple of STEP.

/** The current step: floor(percent_used / STEP) * STEP, with percent_used = floor(tokens·100 / window). */
export function currentStep(tokens: number, contextWindow: number, stepPercent: number): number {
  const percentUsed = Math.floor((tokens * 100) / contextWindow);
  return Math.floor(percentUsed / stepPercent) * stepPercent;
}

/** Fires when the step passed the last one; a jump over several steps fires once. */
export function shouldTrigger(step: number, lastStep: number): boolean {
  return step > lastStep;
}
