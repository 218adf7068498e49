package daemon

// TEMPORARY MERGE SHIM (issue 18, helper daemonwire): grpcfront.Config's
// Auth field is added on branch grpcauth. At merge the lead replaces the
// body with the one-line assignment in the comment and deletes this note.

import (
	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/grpcfront"
)

// setGRPCAuth makes the gRPC front authenticate and authorize with c.
// At merge: gc.Auth = c
func setGRPCAuth(gc *grpcfront.Config, c *auth.Checker) { _, _ = gc, c }
