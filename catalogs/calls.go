package catalogs

import (
	"strings"
	"sync/atomic"
)

// Call kinds counted by CallCounts: what the catalog is asked, by the
// first word of the call (catalog.go names each).
const (
	CallLoad   = "load"   // a table's metadata, in full
	CallLocate = "locate" // only its current metadata location (one SQL row)
	CallCommit = "commit"
	CallList   = "list" // namespaces and tables (discovery, the location index)
	CallOther  = "other"
)

// CallKinds lists the kinds CallCounts reports, in a stable order.
func CallKinds() []string { return []string{CallLoad, CallLocate, CallCommit, CallList, CallOther} }

// callCounts counts the calls made to the catalog (answered or not) since
// it was opened. A load answered from the metadata cache counts as the
// locate it costs, not as a load.
type callCounts struct {
	load, locate, commit, list, other atomic.Int64
}

func (c *callCounts) count(op string) {
	kind, rest, _ := strings.Cut(op, " ")
	if kind != CallList && strings.HasPrefix(rest, "namespace") {
		kind = CallOther // a namespace's own calls, not a table's
	}
	switch kind {
	case CallLoad:
		c.load.Add(1)
	case CallLocate:
		c.locate.Add(1)
	case CallCommit:
		c.commit.Add(1)
	case CallList:
		c.list.Add(1)
	default:
		c.other.Add(1)
	}
}

// CallCounts is how many calls of each kind (CallKinds) the catalog was
// asked since it was opened: the fleet's cost to the catalog
// (reactor_catalog_calls_total).
func (c *Catalog) CallCounts() map[string]int64 {
	return map[string]int64{
		CallLoad: c.calls.load.Load(), CallLocate: c.calls.locate.Load(), CallCommit: c.calls.commit.Load(),
		CallList: c.calls.list.Load(), CallOther: c.calls.other.Load(),
	}
}
