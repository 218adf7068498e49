// Package auth is Petrel's security core: the users and ACL policies of
// RocketMQ ACL 2.0's model, the signature checks of both client protocols
// (4.x remoting AccessKey/Signature, 5.x gRPC "authorization" metadata),
// and the pure decision function that says whether a user may do an
// action on a resource. It does no I/O: users and policies come from a
// Directory (the broker's replicated store, or a static one on a name
// server), time from an injected clock (only for rate-limiting logs).
//
// This file is the contract the other packages are written against.
package auth

import (
	"errors"
	"net/netip"
)

// UserType is RocketMQ's user type (JSON values as RocketMQ writes them).
type UserType string

const (
	Super  UserType = "Super"
	Normal UserType = "Normal"
)

// UserStatus is "enable" or "disable"; a disabled user is refused.
type UserStatus string

const (
	Enabled  UserStatus = "enable"
	Disabled UserStatus = "disable"
)

// User is one account. Secret is the shared HMAC key (RocketMQ's
// "password"); it is never logged nor sent back to clients except to
// super users asking for it by name, as RocketMQ does.
type User struct {
	Name   string     `json:"username"`
	Secret string     `json:"password"`
	Type   UserType   `json:"userType"`
	Status UserStatus `json:"userStatus"`
}

// Action is one of RocketMQ's actions.
type Action string

const (
	ActionAll    Action = "All"
	ActionAny    Action = "Any"
	ActionPub    Action = "Pub"
	ActionSub    Action = "Sub"
	ActionCreate Action = "Create"
	ActionUpdate Action = "Update"
	ActionDelete Action = "Delete"
	ActionGet    Action = "Get"
	ActionList   Action = "List"
)

// Decision of a policy entry; Deny wins over Allow.
type Decision string

const (
	Allow Decision = "Allow"
	Deny  Decision = "Deny"
)

// ResourceType is what a resource names.
type ResourceType string

const (
	ResourceAny     ResourceType = "Any" // "*": every resource
	ResourceCluster ResourceType = "Cluster"
	ResourceTopic   ResourceType = "Topic"
	ResourceGroup   ResourceType = "Group"
)

// Pattern is how a policy's resource name matches a request's.
type Pattern string

const (
	Literal  Pattern = "LITERAL"
	Prefixed Pattern = "PREFIXED" // "Topic:order-*"
	AnyName  Pattern = "ANY"      // "Topic:*"
)

// Resource is a parsed resource string: "*", "Cluster", "Cluster:NAME",
// "Topic:NAME", "Topic:PREFIX*", "Topic:*", "Group:...". A request's
// resource is always Literal (Cluster with an empty name is the cluster
// the request was sent to).
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern Pattern
}

// PolicyType of a policy: Custom (written by operators) or Default.
type PolicyType string

const (
	Custom  PolicyType = "Custom"
	Default PolicyType = "Default"
)

// PolicyEntry allows or denies Actions on Resource from SourceIPs (empty:
// from anywhere).
type PolicyEntry struct {
	Resource  Resource
	Actions   []Action
	SourceIPs []netip.Prefix
	Decision  Decision
}

// Policy is a list of entries of one type.
type Policy struct {
	Type    PolicyType
	Entries []PolicyEntry
}

// Acl is a subject's policies. Subject is "User:NAME".
type Acl struct {
	Subject  string
	Policies []Policy
}

// Request is one permission a request needs: any one of Actions on
// Resource (RocketMQ's lists, e.g. route queries need Pub, Sub or Get on
// the topic).
type Request struct {
	Resource Resource
	Actions  []Action
}

// Directory is where a Checker finds users and policies. Implementations
// are safe for concurrent use and fast (called per request).
type Directory interface {
	User(name string) (User, bool)
	// Acl returns the policies of subject ("User:NAME").
	Acl(subject string) (Acl, bool)
}

// Errors of the management operations (the broker's store returns them,
// wrapped; the fronts map them to RocketMQ answers).
var (
	ErrUserExists   = errors.New("auth: the user exists already")
	ErrUserNotFound = errors.New("auth: no such user")
	ErrAclExists    = errors.New("auth: the subject has an ACL already")
	ErrAclNotFound  = errors.New("auth: no ACL for this subject")
	ErrInvalid      = errors.New("auth: invalid user or ACL")
)

// RefusalKind says whether the caller could not be authenticated or was
// authenticated but lacks the permission.
type RefusalKind int

const (
	Unauthenticated RefusalKind = iota + 1
	Forbidden
)

// Refusal is a request's refusal. Msg is for the client: it names the user
// and what is missing (the resource and action), never a secret or an
// internal cause.
type Refusal struct {
	Kind RefusalKind
	User string // "" when the request carried no AccessKey
	Msg  string
}

func (r *Refusal) Error() string { return r.Msg }

// RemotingCode is the 4.x answer code of a refusal: NO_PERMISSION (16).
const RemotingCode int16 = 16

// GRPCCode is the 5.x in-band status of a refusal: UNAUTHORIZED (40100)
// or FORBIDDEN (40300).
func (r *Refusal) GRPCCode() int32 {
	if r.Kind == Forbidden {
		return 40300
	}
	return 40100
}

// Fields is a 4.x request's ext fields and body as the signature reads
// them; *remoting.Command satisfies it.
type Fields interface {
	Ext(key string) string
	// EachExt visits every field; a key may come more than once, the last
	// one wins.
	EachExt(fn func(key, value string))
}
