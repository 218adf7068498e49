package rmq

// The codec of the ACL 2.0 management requests (auth.go has their codes,
// fields and bodies), as RocketMQ 5.3's MQClientAPIImpl sends them and
// its AdminBrokerProcessor answers:
//
//	3001 AUTH_CREATE_USER  ext username            body UserInfo
//	3002 AUTH_UPDATE_USER  ext username            body UserInfo (absent fields keep the user's)
//	3003 AUTH_DELETE_USER  ext username
//	3004 AUTH_GET_USER     ext username            answer UserInfo, or no body: no such user
//	3005 AUTH_LIST_USER    ext filter (optional)   answer [UserInfo...]
//	3006 AUTH_CREATE_ACL   ext subject             body AclInfo
//	3007 AUTH_UPDATE_ACL   ext subject             body AclInfo
//	3008 AUTH_DELETE_ACL   ext subject, policyType (optional), resource (optional: the whole ACL)
//	3009 AUTH_GET_ACL      ext subject             answer AclInfo, or no body: no ACL
//	3010 AUTH_LIST_ACL     ext subjectFilter, resourceFilter (optional)   answer [AclInfo...]
//
// Java writes the bodies with fastjson (fields in alphabetical order,
// null fields left out); field order does not matter to either side.

import (
	"bytes"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Bounds of the bodies a decoder accepts: a user is a few short strings;
// an ACL of a thousand entries fits in well under MaxAclInfoBytes. The
// list answers a client reads are bounded by the frame limit.
const (
	MaxUserInfoBytes = 64 << 10
	MaxAclInfoBytes  = 1 << 20
	MaxAuthListBytes = remoting.DefaultMaxFrameBytes
)

// UserRequest is the header of 3001-3004: the user's name (required).
type UserRequest struct {
	Username string
}

// DecodeUserRequest reads the header of 3001, 3002, 3003 or 3004.
func DecodeUserRequest(c *remoting.Command) (UserRequest, error) {
	f := fields{c: c}
	h := UserRequest{Username: f.need(FieldUsername)}
	return h, f.result()
}

// ListUsersRequest is the header of 3005: Filter, a substring of the
// names to list ("" lists every user).
type ListUsersRequest struct {
	Filter string
}

// DecodeListUsersRequest reads the header of 3005; it cannot fail (every
// field is optional), and returns an error only for uniformity.
func DecodeListUsersRequest(c *remoting.Command) (ListUsersRequest, error) {
	return ListUsersRequest{Filter: c.Ext(FieldFilter)}, nil
}

// AclRequest is the header of 3006, 3007 and 3009: the subject
// ("User:NAME", required).
type AclRequest struct {
	Subject string
}

// DecodeAclRequest reads the header of 3006, 3007 or 3009.
func DecodeAclRequest(c *remoting.Command) (AclRequest, error) {
	f := fields{c: c}
	h := AclRequest{Subject: f.need(FieldSubject)}
	return h, f.result()
}

// DeleteAclRequest is the header of 3008: the subject (required), the
// policy type ("" is Custom, as in RocketMQ; mqadmin never sends it) and
// the resource whose entries go ("": the whole ACL).
type DeleteAclRequest struct {
	Subject    string
	PolicyType string
	Resource   string
}

// DecodeDeleteAclRequest reads the header of 3008.
func DecodeDeleteAclRequest(c *remoting.Command) (DeleteAclRequest, error) {
	f := fields{c: c}
	h := DeleteAclRequest{Subject: f.need(FieldSubject), PolicyType: f.str(FieldPolicyType), Resource: f.str(FieldResource)}
	return h, f.result()
}

// ListAclsRequest is the header of 3010: optional filters on the subject
// and the resource ("" matches everything).
type ListAclsRequest struct {
	SubjectFilter  string
	ResourceFilter string
}

// DecodeListAclsRequest reads the header of 3010; like
// DecodeListUsersRequest it cannot fail.
func DecodeListAclsRequest(c *remoting.Command) (ListAclsRequest, error) {
	return ListAclsRequest{SubjectFilter: c.Ext(FieldSubjectFilter), ResourceFilter: c.Ext(FieldResourceFilter)}, nil
}

// EncodeCreateUser is a 3001 request for u (the header names
// u.Username, as Java's client does).
func EncodeCreateUser(u UserInfo) *remoting.Command {
	return remoting.NewRequest(CodeAuthCreateUser, map[string]string{FieldUsername: u.Username}, EncodeUserInfo(u))
}

// EncodeUpdateUser is a 3002 request: u's empty fields keep the user's.
func EncodeUpdateUser(u UserInfo) *remoting.Command {
	return remoting.NewRequest(CodeAuthUpdateUser, map[string]string{FieldUsername: u.Username}, EncodeUserInfo(u))
}

// EncodeDeleteUser is a 3003 request.
func EncodeDeleteUser(username string) *remoting.Command {
	return remoting.NewRequest(CodeAuthDeleteUser, map[string]string{FieldUsername: username}, nil)
}

// EncodeGetUser is a 3004 request.
func EncodeGetUser(username string) *remoting.Command {
	return remoting.NewRequest(CodeAuthGetUser, map[string]string{FieldUsername: username}, nil)
}

// EncodeListUsers is a 3005 request.
func EncodeListUsers(h ListUsersRequest) *remoting.Command {
	ext := map[string]string{}
	if h.Filter != "" {
		ext[FieldFilter] = h.Filter
	}
	return remoting.NewRequest(CodeAuthListUser, ext, nil)
}

// EncodeCreateACL is a 3006 request for a (the header names a.Subject).
func EncodeCreateACL(a AclInfo) *remoting.Command {
	return remoting.NewRequest(CodeAuthCreateACL, map[string]string{FieldSubject: a.Subject}, EncodeAclInfo(a))
}

// EncodeUpdateACL is a 3007 request.
func EncodeUpdateACL(a AclInfo) *remoting.Command {
	return remoting.NewRequest(CodeAuthUpdateACL, map[string]string{FieldSubject: a.Subject}, EncodeAclInfo(a))
}

// EncodeDeleteACL is a 3008 request (empty fields are left out).
func EncodeDeleteACL(h DeleteAclRequest) *remoting.Command {
	ext := map[string]string{FieldSubject: h.Subject}
	if h.PolicyType != "" {
		ext[FieldPolicyType] = h.PolicyType
	}
	if h.Resource != "" {
		ext[FieldResource] = h.Resource
	}
	return remoting.NewRequest(CodeAuthDeleteACL, ext, nil)
}

// EncodeGetACL is a 3009 request.
func EncodeGetACL(subject string) *remoting.Command {
	return remoting.NewRequest(CodeAuthGetACL, map[string]string{FieldSubject: subject}, nil)
}

// EncodeListACLs is a 3010 request (empty filters are left out).
func EncodeListACLs(h ListAclsRequest) *remoting.Command {
	ext := map[string]string{}
	if h.SubjectFilter != "" {
		ext[FieldSubjectFilter] = h.SubjectFilter
	}
	if h.ResourceFilter != "" {
		ext[FieldResourceFilter] = h.ResourceFilter
	}
	return remoting.NewRequest(CodeAuthListACL, ext, nil)
}

// checkAuthBody refuses a body that is absent (or JSON null) or over limit,
// naming the Java class.
func checkAuthBody(body []byte, name string, limit int) error {
	if len(body) > limit {
		return &BodyError{Body: name, Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), limit)}
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return &BodyError{Body: name, Problem: "the request has no " + name + " JSON body"}
	}
	return nil
}

// DecodeUserInfo reads the body of 3001 or 3002 (or a 3004 answer). An
// absent, oversized or malformed body is a *BodyError naming the field;
// the values are not checked here (the front converts them).
func DecodeUserInfo(body []byte) (UserInfo, error) {
	if err := checkAuthBody(body, "UserInfo", MaxUserInfoBytes); err != nil {
		return UserInfo{}, err
	}
	var u UserInfo
	if err := decodeJSON(body, "UserInfo", &u); err != nil {
		return UserInfo{}, err
	}
	return u, nil
}

// EncodeUserInfo writes a UserInfo body.
func EncodeUserInfo(u UserInfo) []byte { return mustJSON(u) }

// DecodeUserInfos reads a 3005 answer: a JSON array; no body (RocketMQ's
// answer when no user matches) is an empty list.
func DecodeUserInfos(body []byte) ([]UserInfo, error) {
	var us []UserInfo
	err := decodeList(body, "UserInfo", &us)
	return us, err
}

// EncodeUserInfos writes a 3005 answer; no user is [] (Java's client
// reads it as an empty list, where an absent body makes it null).
func EncodeUserInfos(us []UserInfo) []byte {
	if us == nil {
		us = []UserInfo{}
	}
	return mustJSON(us)
}

// DecodeAclInfo reads the body of 3006 or 3007 (or a 3009 answer), as
// DecodeUserInfo does.
func DecodeAclInfo(body []byte) (AclInfo, error) {
	if err := checkAuthBody(body, "AclInfo", MaxAclInfoBytes); err != nil {
		return AclInfo{}, err
	}
	var a AclInfo
	if err := decodeJSON(body, "AclInfo", &a); err != nil {
		return AclInfo{}, err
	}
	return a, nil
}

// EncodeAclInfo writes an AclInfo body.
func EncodeAclInfo(a AclInfo) []byte { return mustJSON(a) }

// DecodeAclInfos reads a 3010 answer (no body: an empty list).
func DecodeAclInfos(body []byte) ([]AclInfo, error) {
	var as []AclInfo
	err := decodeList(body, "AclInfo", &as)
	return as, err
}

// EncodeAclInfos writes a 3010 answer; none is [].
func EncodeAclInfos(as []AclInfo) []byte {
	if as == nil {
		as = []AclInfo{}
	}
	return mustJSON(as)
}

// decodeList reads a JSON array answer of name elements into v; an empty
// body or null is an empty list.
func decodeList(body []byte, name string, v any) error {
	if len(body) > MaxAuthListBytes {
		return &BodyError{Body: name + " list", Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxAuthListBytes)}
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	return decodeJSON(body, name+" list", v)
}
