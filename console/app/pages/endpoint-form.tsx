/** Being written: the page helpers replace this. */
export function EndpointFormPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Add endpoint</h1>;
}
