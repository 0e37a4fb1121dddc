// Module resolution hook: the one WIT import the SDK has, mapped to the stub.
export async function resolve(specifier, context, next) {
  if (specifier === 'toolhost:plugin/host@0.4.0') {
    return { url: new URL('./host-stub.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
