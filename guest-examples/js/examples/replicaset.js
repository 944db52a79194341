// `replicaset`: the apps/v1 ReplicaSet controller (see lib/replicaset.js and
// docs/guests/javascript.md). Watches ReplicaSets and the Pods they own; keeps spec.replicas
// active Pods from spec.template and writes the ReplicaSet's status.
import { controller } from '../sdk/turtles-controller.js';
import { replicaSetController } from './lib/replicaset.js';

export const { register, reconcile } = controller(replicaSetController());
