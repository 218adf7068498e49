package daemon

// TEMPORARY MERGE SHIM (issue 18, helper daemonwire): grpcfront.Config's
// Auth field is added on branch grpcauth. At merge the lead replaces the
// body with the one-line assignment in the comment and deletes this note.
// (grpcfront's own remoting clients, the slave's forwarded receives and
// the check relay, are not signed: with --auth on the master they need a
// Config field for the daemon's Security.Sign(), which grpcauth owns.)

import (
	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/grpcfront"
)

// setGRPCAuth makes the gRPC front authenticate and authorize with c.
// At merge: gc.Auth = c
func setGRPCAuth(gc *grpcfront.Config, c *auth.Checker) { _, _ = gc, c }
