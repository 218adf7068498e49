package brokerfront

import (
	"context"

	"github.com/petrelmq/petrel/internal/auth"
)

// authAdmin is the broker's user and ACL store as issue 18's contract
// (AUTH-API.md, "Broker API") gives it: *broker.Broker, or an in-memory
// one in tests.
type authAdmin interface {
	CreateUser(ctx context.Context, u auth.User) error
	UpdateUser(ctx context.Context, u auth.User) error
	DeleteUser(ctx context.Context, name string) error
	GetUser(name string) (auth.User, bool)
	ListUsers(filter string) []auth.User
	CreateAcl(ctx context.Context, a auth.Acl) error
	UpdateAcl(ctx context.Context, a auth.Acl) error
	DeleteAcl(ctx context.Context, subject string, pt auth.PolicyType, resource string) error
	GetAcl(subject string) (auth.Acl, bool)
	ListAcls(subjectFilter, resourceFilter string) []auth.Acl
}
