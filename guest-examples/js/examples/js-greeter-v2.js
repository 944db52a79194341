// `js-greeter-v2`: the same as js-greeter with another greeting; drop it in under the name
// js-greeter.wasm to see a hot swap.
import { greeter } from './lib/greeter.js';

export const { register, reconcile } = greeter('hi from javascript');
