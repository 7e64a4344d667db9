/** What a command hands back to `main`, which prints one form or the other. */
export interface CommandResult {
  /** Printed as JSON with `--json`. */
  readonly json: unknown;
  /** Printed otherwise. */
  readonly human: string;
  /**
   * Set when the command did part of its work and failed the rest: the output is still printed,
   * then this line goes to stderr and the exit status is 1.
   */
  readonly failure?: string;
}
