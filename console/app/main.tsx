/** The console's entry: who the page acts as (session.ts), then the shell (app.tsx). */
import { render } from 'preact';
import './styles.css';
import { App } from './app';
import { toError } from './errors';
import { completeSignIn, loadConfig, takeCredential } from './session';

async function start(): Promise<void> {
  const root = document.getElementById('app')!;
  const config = await loadConfig();
  let credential = takeCredential();
  let signInError: Error | undefined;
  if (config.signIn !== undefined) {
    try {
      credential = (await completeSignIn(config.signIn)) ?? credential;
    } catch (error) {
      signInError = toError(error);
    }
  }
  if (!location.hash.startsWith('#/')) history.replaceState(null, '', `${location.pathname}#/overview`);
  root.textContent = '';
  render(<App credential={credential} config={config} {...(signInError === undefined ? {} : { signInError })} />, root);
}

void start();
