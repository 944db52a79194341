// `{{name}}`: a turtles controller in JavaScript, built into a WebAssembly component by
// componentize-js. Every ConfigMap, in every namespace, gets the annotation `turtles.dev/{{name}}`
// set to GREETING, written with a JSON merge patch. Edit GREETING, save, and `turtles dev` swaps
// the new build in.
//
// './turtles-sdk/turtles-controller.js' is the SDK of the turtles SDK bundle, not a file of this
// project: `turtles build` stages it there, and `npm test`'s loader resolves it (see README.md).
import { api, controller, log, meta, permission, watch, CONFIGMAPS } from './turtles-sdk/turtles-controller.js';

export const ANNOTATION = 'turtles.dev/{{name}}';
export const GREETING = 'hello from {{name}}';

export const { register, reconcile } = controller({
  register() {
    return {
      watches: [watch(CONFIGMAPS)], // core v1 configmaps, all namespaces
      permissions: [permission('', 'configmaps', ['get', 'list', 'watch', 'patch'])],
    };
  },

  reconcile(key, cm) {
    // `cm` is the ConfigMap as the store has it when the call starts (never older than what
    // api.get would read), or undefined once it is gone: no need to read it again.
    if (!cm) return; // gone: nothing to do
    if (meta.annotation(cm, ANNOTATION) === GREETING) return;
    try {
      api.patchMerge(CONFIGMAPS.objectPath(key.namespace, key.name), {
        metadata: { annotations: { [ANNOTATION]: GREETING } },
      });
    } catch (e) {
      if (e.isNotFound?.()) return; // deleted meanwhile
      throw e;
    }
    log.info(`annotated ${key.namespace}/${key.name}`);
  },
});
