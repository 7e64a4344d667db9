/** Being written: the page helpers replace this. */
export function OverviewPage(_props: Record<string, unknown>) {
  return <h1 tabIndex={-1}>Overview</h1>;
}
