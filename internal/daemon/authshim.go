package daemon

// TEMPORARY MERGE SHIM (issue 18, helper daemonwire): the broker's user
// store (AuthDirectory, EnsureInitUser, ListUsers) is built on branch
// authstore. At merge the lead replaces each body below with the call in
// its comment and deletes this note; nothing else in the daemon changes.

import (
	"context"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/broker"
)

// authDirectory is b's users and ACLs.
// At merge: return b.AuthDirectory()
func authDirectory(b *broker.Broker) auth.Directory { return emptyDirectory{} }

// ensureInitUser creates the init user as a super user when b has none.
// At merge: return b.EnsureInitUser(ctx, name, secret)
func ensureInitUser(ctx context.Context, b *broker.Broker, name, secret string) (bool, error) {
	return false, nil
}

// userCount is how many users b's store holds.
// At merge: return len(b.ListUsers(""))
func userCount(b *broker.Broker) int { return 0 }

// emptyDirectory has no user and no ACL (until authstore's store exists).
// At merge: delete it.
type emptyDirectory struct{}

func (emptyDirectory) User(string) (auth.User, bool) { return auth.User{}, false }
func (emptyDirectory) Acl(string) (auth.Acl, bool)   { return auth.Acl{}, false }
