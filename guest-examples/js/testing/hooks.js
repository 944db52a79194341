// Node module resolution hook (see register.js): the host interface becomes ./fake-host.js.
const HOST = /^turtles:controller\/host(@[0-9.]+)?$/;

export async function resolve(specifier, context, nextResolve) {
  if (HOST.test(specifier)) {
    return { url: new URL('./fake-host.js', import.meta.url).href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
