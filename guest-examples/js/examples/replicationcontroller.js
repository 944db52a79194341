// `replicationcontroller`: the core/v1 ReplicationController controller, the ReplicaSet
// controller's code (lib/replicaset.js) with a ReplicationController's plain-map selector, as
// kube runs the same controller for both. Watches ReplicationControllers and the Pods they own.
import { controller } from '../sdk/turtles-controller.js';
import { replicaSetController, REPLICATION_CONTROLLER } from './lib/replicaset.js';

export const { register, reconcile } = controller(replicaSetController({ kind: REPLICATION_CONTROLLER }));
