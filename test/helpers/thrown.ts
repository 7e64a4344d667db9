import { expect } from 'vitest';

/**
 * The error `act` throws, asserting its class: fails the test when `act` throws nothing or an error
 * of another class.
 */
export function thrownBy<E extends Error>(act: () => unknown, type: abstract new (...args: never[]) => E): E {
  let error: unknown;
  try {
    act();
  } catch (caught) {
    error = caught;
  }
  if (error === undefined) throw new Error(`expected a ${type.name}, got none`);
  expect(error).toBeInstanceOf(type);
  return error as E;
}
