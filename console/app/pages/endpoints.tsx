/** Being written: the page helpers replace this. */
export function EndpointsPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Endpoints</h1>;
}
