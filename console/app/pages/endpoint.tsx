/** Being written: the page helpers replace this. */
export function EndpointPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Endpoint</h1>;
}
