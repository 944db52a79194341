// @turtles-world wit/admission policy
//
// `js-owner-policy`: a validating admission policy (world `policy` of wit/admission, see the
// marker line above, which build.sh reads). Core v1 ConfigMaps and Secrets labelled
// `turtles.dev/owner-policy` (any value) must carry the annotation `turtles.dev/owner`:
// without it a CREATE or UPDATE is refused (422 Invalid); an owner that is not an email address
// (no '@') is let through with a warning. A failed call refuses the write (failurePolicy fail).
import { invalid, meta, policy, rule } from '../sdk/turtles-admission.js';

export const OWNER = 'turtles.dev/owner';

export const { register, validate, mutate } = policy({
  register() {
    return {
      rules: [rule('v1', ['configmaps', 'secrets'], ['CREATE', 'UPDATE'])],
      objectSelector: 'turtles.dev/owner-policy', // the label exists, whatever its value
      failurePolicy: 'fail',
    };
  },

  validate(req) {
    const owner = meta.annotation(req.object, OWNER);
    if (owner === undefined) return invalid(`annotation "${OWNER}" is required`);
    if (!String(owner).includes('@')) req.warn(`js-owner-policy: owner "${owner}" is not an email address`);
  },
});
