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

// What `resourceUpdated` was told, in order.
export const updates = [];

export function resourceUpdated(uri) {
  updates.push(uri);
}

// How `ask` answers: a function from the question to an `answer` variant, or
// throwing as componentize-qjs does for a WIT `err` (an Error whose `payload`
// is the `ask-error` variant). Unset, nobody can be asked.
export const asking = {
  questions: [],
  answer: () => {
    throw Object.assign(new Error('unavailable'), { payload: { tag: 'unavailable', val: 'no client' } });
  },
};

export function ask(question) {
  asking.questions.push(question);
  return asking.answer(question);
}
