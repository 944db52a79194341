// `js-greeter`: ConfigMaps labelled turtles.dev/greet=true get
// `turtles.dev/greeting: "hello from javascript, <name>"`.
import { greeter } from './lib/greeter.js';

export const { register, reconcile } = greeter('hello from javascript');
