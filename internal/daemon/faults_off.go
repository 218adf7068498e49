//go:build !verifyfault

package daemon

import (
	"log/slog"

	"github.com/petrelmq/petrel/internal/store"
)

// openStore opens the broker's store. The build tag verifyfault puts the
// test-only slow-disk fault under it (faults_verifyfault.go); without the
// tag it is store.Open.
func openStore(cfg store.Config, _ *slog.Logger) (*store.Store, error) { return store.Open(cfg) }
