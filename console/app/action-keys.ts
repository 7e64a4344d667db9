/**
 * Idempotency-Keys for the actions a person starts. Nothing here touches the DOM, so the replay
 * plan's unit test uses the same keys the page does.
 */

/**
 * Idempotency-Keys for one opening of a dialog or form: a request sent again with the same body (its
 * answer was lost, the person clicked again) takes the same key, so the API acts once; a request
 * with another body (another reason, the next part) is another action, with a key of its own.
 */
export function actionKeys(): (body: unknown) => string {
  const keys = new Map<string, string>();
  return (body) => {
    const request = JSON.stringify(body) ?? '';
    let key = keys.get(request);
    if (key === undefined) keys.set(request, (key = crypto.randomUUID()));
    return key;
  };
}
