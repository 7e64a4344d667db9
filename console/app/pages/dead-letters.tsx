/** Being written: the page helpers replace this. */
export function DeadLettersPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Dead letters</h1>;
}
