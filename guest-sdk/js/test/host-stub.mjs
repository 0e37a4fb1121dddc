// An in-memory stand-in for the host interface, for native unit tests.
export const state = new Map();
export const logs = [];

export function log(level, message) {
  logs.push([level, message]);
}

export function stateGet(key) {
  return state.get(key);
}

export function stateSet(key, value) {
  state.set(key, value);
}

export function stateDelete(key) {
  state.delete(key);
}
