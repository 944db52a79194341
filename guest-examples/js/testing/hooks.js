// Node module resolution hook (see register.js): the host interface becomes ./fake-host.js (and
// an admission policy's, turtles:admission/host, ./fake-admission-host.js).
// A project made by `turtles new --lang js` imports the SDK as if it were a folder `turtles-sdk/`
// at the project's root ('./turtles-sdk/turtles-controller.js'; build.sh --project stages sdk/
// there for componentize-js): here '(./|../)*turtles-sdk/X' is ../sdk/X, and
// '(./|../)*turtles-sdk/testing/X' is ./X (these fakes, for the project's unit tests).
const HOST = /^turtles:controller\/host(@[0-9.]+)?$/;
const ADMISSION_HOST = /^turtles:admission\/host(@[0-9.]+)?$/;
const SDK = /^(?:\.\.?\/)+turtles-sdk\/(.+)$/;

export async function resolve(specifier, context, nextResolve) {
  if (HOST.test(specifier)) {
    return { url: new URL('./fake-host.js', import.meta.url).href, shortCircuit: true };
  }
  if (ADMISSION_HOST.test(specifier)) {
    return { url: new URL('./fake-admission-host.js', import.meta.url).href, shortCircuit: true };
  }
  const sdk = SDK.exec(specifier);
  if (sdk) {
    const rest = sdk[1];
    const file = rest.startsWith('testing/') ? `./${rest.slice('testing/'.length)}` : `../sdk/${rest}`;
    return nextResolve(new URL(file, import.meta.url).href, context);
  }
  return nextResolve(specifier, context);
}
