// The greeter controller, shared by `js-greeter` and `js-greeter-v2` (which differ only in the
// greeting): every ConfigMap labelled `turtles.dev/greet=true` gets the annotation
// `turtles.dev/greeting: "<greeting>, <name>"`, written with a merge patch.

import { api, controller, log, meta, permission, watch, CONFIGMAPS } from '../../sdk/turtles-controller.js';

export const ANNOTATION = 'turtles.dev/greeting';

export function greeter(greeting) {
  return controller({
    register() {
      return {
        watches: [watch(CONFIGMAPS, { labelSelector: 'turtles.dev/greet=true' })],
        permissions: [permission('', 'configmaps', ['get', 'list', 'watch', 'patch'])],
      };
    },

    reconcile(key, cm) {
      if (!cm) return; // gone: nothing to do
      const want = `${greeting}, ${key.name}`;
      if (meta.annotation(cm, ANNOTATION) === want) return;
      try {
        api.patchMerge(CONFIGMAPS.objectPath(key.namespace, key.name), {
          metadata: { annotations: { [ANNOTATION]: want } },
        });
      } catch (e) {
        if (e.isNotFound?.()) return; // deleted meanwhile
        throw e; // transient: retried with backoff
      }
      log.info('greeted', { configmap: `${key.namespace}/${key.name}`, greeting });
    },
  });
}
