// `node --import ./testing/register.js ...`: lets plain node load controllers, by resolving the
// component import 'turtles:controller/host@0.2.0' to ./fake-host.js (and an admission policy's
// 'turtles:admission/host@0.1.0' to ./fake-admission-host.js).
import { register } from 'node:module';

register('./hooks.js', import.meta.url);
