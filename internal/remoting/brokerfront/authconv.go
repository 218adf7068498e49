package brokerfront

// The management requests' rules on top of authwire's conversions of
// rmq's ACL 2.0 bodies (which parse with the auth core's readers, so the
// broker reads a body as every other caller does): the header names the
// user or subject and the body may only repeat it; a created user needs
// a secret and takes RocketMQ's defaults; answers carry a secret only
// when the caller may see it. Every error's text is a sentence for the
// client naming the field and what it must be (it holds only what the
// client sent).

import (
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// userFromInfo converts the body of a create (create true) or update
// user request whose header names name. The body's username, when there
// is one, must be that name. A create needs a password and defaults the
// type to Normal and the status to enable, as RocketMQ does; an update
// leaves empty fields empty (the broker keeps the user's values).
func userFromInfo(name string, info rmq.UserInfo, create bool) (auth.User, error) {
	if err := auth.ValidUserName(name); err != nil {
		return auth.User{}, err
	}
	if info.Username != "" && info.Username != name {
		if err := auth.ValidUserName(info.Username); err != nil {
			return auth.User{}, auth.Invalidf("in the body: %v", err)
		}
		return auth.User{}, auth.Invalidf("the body's username %q is not the header's %q; send the same name in both", info.Username, name)
	}
	info.Username = name
	u, err := authwire.UserFromInfo(info)
	if err != nil {
		return auth.User{}, err
	}
	if create {
		if u.Secret == "" {
			return auth.User{}, auth.Invalidf("password is empty; a new user needs a secret")
		}
		if u.Type == "" {
			u.Type = auth.Normal
		}
		if u.Status == "" {
			u.Status = auth.Enabled
		}
	}
	return u, nil
}

// userToInfo is a get or list answer's entry; the secret only when
// withSecret.
func userToInfo(u auth.User, withSecret bool) rmq.UserInfo {
	info := authwire.UserToInfo(u)
	if !withSecret {
		info.Password = ""
	}
	return info
}

// userOfSubject is the user name of a canonical subject (auth.Subject).
func userOfSubject(subject string) string {
	return strings.TrimPrefix(subject, auth.Subject(""))
}

// aclFromInfo converts the body of a create or update ACL request whose
// header names headerSubject; the body's subject, when there is one, must
// name the same user.
func aclFromInfo(headerSubject string, info rmq.AclInfo) (auth.Acl, error) {
	name, err := auth.ParseSubject(headerSubject)
	if err != nil {
		return auth.Acl{}, err
	}
	if info.Subject != "" {
		body, err := auth.ParseSubject(info.Subject)
		if err != nil {
			return auth.Acl{}, auth.Invalidf("in the body: %v", err)
		}
		if body != name {
			return auth.Acl{}, auth.Invalidf("the body's subject %q is not the header's %q; send the same subject in both", auth.Subject(body), auth.Subject(name))
		}
	}
	info.Subject = auth.Subject(name)
	return authwire.AclFromInfo(info)
}
