// {{name}}: a turtles controller in Go. Every ConfigMap, in every namespace, gets the annotation
// turtles.dev/{{name}} (a JSON merge patch); the host hot-swaps the component when it is rebuilt.
package main

import (
	"context"

	"turtles.dev/go/turtles"
)

const (
	annotation = "turtles.dev/{{name}}"
	greeting   = "hello from {{name}}"
)

type reconciler struct{}

func (reconciler) Reconcile(ctx context.Context, req turtles.Request) (turtles.Result, error) {
	cm, err := turtles.Get(ctx, turtles.ConfigMaps, req.Namespace, req.Name)
	if turtles.IsNotFound(err) {
		return turtles.Result{}, nil // deleted: nothing to do
	}
	if err != nil {
		return turtles.Result{}, err // an API error is retried with backoff
	}
	if cm.GetAnnotations()[annotation] == greeting {
		return turtles.Result{}, nil // annotated already
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{annotation: greeting}}}
	if _, err := turtles.Patch(ctx, turtles.ConfigMaps, req.Namespace, req.Name, turtles.MergePatch, patch); err != nil {
		return turtles.Result{}, err
	}
	turtles.Info("annotated " + req.NamespacedName.String())
	return turtles.Result{}, nil
}

func init() {
	turtles.NewControllerManagedBy().
		For(turtles.ConfigMaps).
		WithPermission(turtles.Core("configmaps").Allow("get", "list", "watch", "patch")).
		Complete(reconciler{})
}

// main is not called: the component is a reactor (c-shared); init registers the controller.
func main() {}
