package brokerfront

// ACL 2.0 management, 3001-3010 (rmq/authcodec.go has the wire), as
// RocketMQ 5.3's AdminBrokerProcessor answers them:
//
//   - Success is code 0. Get user / get ACL answer the UserInfo / AclInfo
//     JSON, or no body when there is none (mqadmin -c asks every master
//     until one has it); list answers are JSON arrays ([] when empty).
//     Delete user of an unknown user succeeds, as in RocketMQ.
//   - A user that exists already (create), an unknown user (update, an
//     ACL's subject), an unknown ACL (delete) and a caller who is not a
//     super user changing a super user are NO_PERMISSION (16), RocketMQ's
//     code for its AuthenticationException / AuthorizationException, with
//     a remark that says what to do.
//   - A malformed header or body, or a value that is not what the field
//     allows, is INVALID_PARAMETER (29) naming the field.
//   - A write on a slave is the broker's refusal (SYSTEM_ERROR, as for the
//     other admin writes); anything else is SYSTEM_ERROR with its cause in
//     the log only.
//
// Secrets are never logged. Get user answers the password only to an
// authenticated super user (Options.Authenticated and the request's
// AccessKey naming a super user): RocketMQ sends it to anyone allowed the
// request; list answers never carry passwords.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// invalid answers INVALID_PARAMETER with err's text (a *FieldError, a
// *BodyError or a conversion error: each a sentence for the client).
func invalid(req *remoting.Command, err error) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
}

func noPermission(req *remoting.Command, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespNoPermission, fmt.Sprintf(format, args...))
}

// callerIsSuper reports whether the request's caller may change super
// users, as RocketMQ decides it: a request without AccessKey (the broker
// runs without authentication) may; one with it only if it names a super
// user.
func callerIsSuper(adm authAdmin, req *remoting.Command) (string, bool) {
	ak := req.Ext(rmq.FieldAccessKey)
	if ak == "" {
		return "", true
	}
	u, ok := adm.GetUser(ak)
	return ak, ok && u.Type == auth.Super
}

// superOnly refuses a change of a super user by a caller who is not one.
func superOnly(req *remoting.Command, caller, verb, target string) *remoting.Command {
	return noPermission(req, "user %q is not a super user and may not %s the super user %q; sign the request as a super user", caller, verb, target)
}

// authError maps a store error of a management request to its answer.
// what names the user or subject for the remark.
func (f *Front) authError(req *remoting.Command, err error, what string) *remoting.Command {
	switch {
	case errors.Is(err, broker.ErrNotMaster), errors.Is(err, broker.ErrLeaseExpired):
		return f.errorResponse(req, err)
	case errors.Is(err, auth.ErrUserExists):
		return noPermission(req, "user %q exists already; change it with update user, or delete it first", what)
	case errors.Is(err, auth.ErrUserNotFound):
		return noPermission(req, "user %q does not exist; create it first", userOfSubject(what))
	case errors.Is(err, auth.ErrAclExists):
		return noPermission(req, "subject %s has an ACL already; change it with update ACL", what)
	case errors.Is(err, auth.ErrAclNotFound):
		return noPermission(req, "subject %s has no ACL matching the request; list its ACL with get ACL", what)
	case errors.Is(err, auth.ErrInvalid):
		f.log.Debug("user or ACL refused as invalid", "code", req.Code, "subject", what, "err", err)
		sentinel := auth.ErrInvalid.Error()
		detail := strings.NewReplacer(sentinel+": ", "", ": "+sentinel, "", sentinel, "").Replace(err.Error())
		detail = strings.Trim(detail, ": ")
		if detail == "" {
			detail = "check its fields"
		}
		return remoting.NewResponse(req, rmq.RespInvalidParameter, "the broker refused the user or ACL as invalid: "+detail)
	}
	return f.errorResponse(req, err)
}

// userOfRequest reads the user of a create (3001, creating) or update
// (3002) user request: its header's name and its UserInfo body. A
// non-nil answer is the INVALID_PARAMETER refusal to send instead.
func userOfRequest(req *remoting.Command, creating bool) (auth.User, *remoting.Command) {
	h, err := rmq.DecodeUserRequest(req)
	if err != nil {
		return auth.User{}, invalid(req, err)
	}
	info, err := rmq.DecodeUserInfo(req.Body)
	if err != nil {
		return auth.User{}, invalid(req, err)
	}
	u, err := userFromInfo(h.Username, info, creating)
	if err != nil {
		return auth.User{}, invalid(req, err)
	}
	return u, nil
}

// userNameOfRequest reads the valid user name of a delete (3003) or get
// (3004) user request; a non-nil answer is the refusal to send instead.
func userNameOfRequest(req *remoting.Command) (string, *remoting.Command) {
	h, err := rmq.DecodeUserRequest(req)
	if err != nil {
		return "", invalid(req, err)
	}
	if err := auth.ValidUserName(h.Username); err != nil {
		return "", invalid(req, err)
	}
	return h.Username, nil
}

func (f *Front) createUser(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	u, refused := userOfRequest(req, true)
	if refused != nil {
		return refused
	}
	if caller, ok := callerIsSuper(adm, req); !ok && u.Type == auth.Super {
		return superOnly(req, caller, "create", u.Name)
	}
	if err := adm.CreateUser(ctx, u); err != nil {
		return f.authError(req, err, u.Name)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) updateUser(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	u, refused := userOfRequest(req, false)
	if refused != nil {
		return refused
	}
	old, ok := adm.GetUser(u.Name)
	if !ok {
		return f.authError(req, auth.ErrUserNotFound, u.Name)
	}
	if caller, ok := callerIsSuper(adm, req); !ok && (u.Type == auth.Super || old.Type == auth.Super) {
		return superOnly(req, caller, "update", u.Name)
	}
	if err := adm.UpdateUser(ctx, u); err != nil {
		return f.authError(req, err, u.Name)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) deleteUser(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	name, refused := userNameOfRequest(req)
	if refused != nil {
		return refused
	}
	old, ok := adm.GetUser(name)
	if !ok {
		return remoting.NewResponse(req, rmq.RespSuccess, fmt.Sprintf("user %q does not exist; nothing was deleted", name))
	}
	if caller, ok := callerIsSuper(adm, req); !ok && old.Type == auth.Super {
		return superOnly(req, caller, "delete", name)
	}
	if err := adm.DeleteUser(ctx, name); err != nil {
		if errors.Is(err, auth.ErrUserNotFound) {
			return remoting.NewResponse(req, rmq.RespSuccess, fmt.Sprintf("user %q does not exist; nothing was deleted", name))
		}
		return f.authError(req, err, name)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) getUser(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	name, refused := userNameOfRequest(req)
	if refused != nil {
		return refused
	}
	u, ok := adm.GetUser(name)
	if !ok {
		return remoting.NewResponse(req, rmq.RespSuccess, fmt.Sprintf("user %q does not exist", name))
	}
	_, super := callerIsSuper(adm, req)
	withSecret := f.authenticated && req.Ext(rmq.FieldAccessKey) != "" && super
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeUserInfo(userToInfo(u, withSecret))
	return resp
}

func (f *Front) listUsers(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	h, _ := rmq.DecodeListUsersRequest(req)
	users := adm.ListUsers(h.Filter)
	infos := make([]rmq.UserInfo, 0, len(users))
	for _, u := range users {
		infos = append(infos, userToInfo(u, false))
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeUserInfos(infos)
	return resp
}

// aclWrite is create (3006) or update (3007) ACL.
func (f *Front) aclWrite(ctx context.Context, req *remoting.Command, write func(authAdmin, context.Context, auth.Acl) error) *remoting.Command {
	adm := f.authAdm
	h, err := rmq.DecodeAclRequest(req)
	if err != nil {
		return invalid(req, err)
	}
	info, err := rmq.DecodeAclInfo(req.Body)
	if err != nil {
		return invalid(req, err)
	}
	acl, err := aclFromInfo(h.Subject, info)
	if err != nil {
		return invalid(req, err)
	}
	if _, ok := adm.GetUser(userOfSubject(acl.Subject)); !ok {
		return f.authError(req, auth.ErrUserNotFound, acl.Subject)
	}
	if err := write(adm, ctx, acl); err != nil {
		return f.authError(req, err, acl.Subject)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) createACL(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return f.aclWrite(ctx, req, authAdmin.CreateAcl)
}

func (f *Front) updateACL(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return f.aclWrite(ctx, req, authAdmin.UpdateAcl)
}

func (f *Front) deleteACL(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	h, err := rmq.DecodeDeleteAclRequest(req)
	if err != nil {
		return invalid(req, err)
	}
	name, err := auth.ParseSubject(h.Subject)
	if err != nil {
		return invalid(req, err)
	}
	subject := auth.Subject(name)
	pt, err := auth.ParsePolicyType(h.PolicyType)
	if err != nil {
		return invalid(req, err)
	}
	resource := ""
	if h.Resource != "" {
		r, err := auth.ParseResource(h.Resource)
		if err != nil {
			return invalid(req, err)
		}
		resource = r.String()
	}
	if _, ok := adm.GetUser(name); !ok {
		return f.authError(req, auth.ErrUserNotFound, subject)
	}
	if err := adm.DeleteAcl(ctx, subject, pt, resource); err != nil {
		return f.authError(req, err, subject)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func (f *Front) getACL(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	h, err := rmq.DecodeAclRequest(req)
	if err != nil {
		return invalid(req, err)
	}
	name, err := auth.ParseSubject(h.Subject)
	if err != nil {
		return invalid(req, err)
	}
	subject := auth.Subject(name)
	if _, ok := adm.GetUser(name); !ok {
		return f.authError(req, auth.ErrUserNotFound, subject)
	}
	acl, ok := adm.GetAcl(subject)
	if !ok {
		return remoting.NewResponse(req, rmq.RespSuccess, fmt.Sprintf("subject %s has no ACL", subject))
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeAclInfo(authwire.AclToInfo(acl))
	return resp
}

func (f *Front) listACLs(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	adm := f.authAdm
	h, _ := rmq.DecodeListAclsRequest(req)
	acls := adm.ListAcls(h.SubjectFilter, h.ResourceFilter)
	infos := make([]rmq.AclInfo, 0, len(acls))
	for _, a := range acls {
		infos = append(infos, authwire.AclToInfo(a))
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeAclInfos(infos)
	return resp
}
