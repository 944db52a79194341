// go-greeter: the minimal Go controller. Every ConfigMap labelled turtles.dev/greet=true gets the
// annotation turtles.dev/greeting: "hello from Go, <name>" (a merge patch).
package main

import (
	"context"

	"turtles.dev/go/turtles"
)

type greeter struct{}

func (greeter) Reconcile(ctx context.Context, req turtles.Request) (turtles.Result, error) {
	if req.Object == nil {
		return turtles.Result{}, nil // deleted: nothing to do
	}
	greeting := "hello from Go, " + req.Name
	if req.Object.GetAnnotations()["turtles.dev/greeting"] == greeting {
		return turtles.Result{}, nil // greeted already
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"turtles.dev/greeting": greeting}}}
	_, err := turtles.Patch(ctx, turtles.ConfigMaps, req.Namespace, req.Name, turtles.MergePatch, patch)
	return turtles.Result{}, err // an API error is retried with backoff
}

func init() {
	turtles.NewControllerManagedBy().
		For(turtles.ConfigMaps, turtles.WithLabelSelector("turtles.dev/greet=true")).
		WithPermission(turtles.Core("configmaps").Allow("get", "list", "watch", "patch")).
		Complete(greeter{})
}

// main is not called: the component is a reactor (c-shared); init registers the controller.
func main() {}
