/** Being written: the page helpers replace this. */
export function LookupPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Lookup</h1>;
}
