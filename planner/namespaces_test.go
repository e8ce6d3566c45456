package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
)

// The SQL catalog lists a namespace among its own children; the location
// index must still see each namespace, and so each table, once.
func TestListAllNamespacesListsEachOnce(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []table.Identifier{{"db"}, {"db", "sub"}, {"other"}} {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := listAllNamespaces(ctx, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range got {
		names = append(names, strings.Join(ns, "."))
	}
	slices.Sort(names)
	if want := []string{"db", "db.sub", "other"}; !slices.Equal(names, want) {
		t.Errorf("namespaces %q, want %q", names, want)
	}
}
