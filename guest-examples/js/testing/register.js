// `node --import ./testing/register.js ...`: lets plain node load controllers, by resolving the
// component import 'turtles:controller/host@0.2.0' to ./fake-host.js.
import { register } from 'node:module';

register('./hooks.js', import.meta.url);
