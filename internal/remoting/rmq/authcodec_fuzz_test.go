package rmq

import (
	"reflect"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Fuzz targets of the ACL 2.0 management codec (seeds in
// testdata/fuzz/<Target>/): a decoder never panics, refuses with a
// *FieldError or *BodyError only, and what it accepts re-encodes to what
// decodes the same.

// FuzzDecodeUserInfo covers the bodies of 3001/3002 and the answers of
// 3004/3005.
func FuzzDecodeUserInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		if u, err := DecodeUserInfo(body); err != nil {
			checkRefusal(t, err)
		} else if again, err := DecodeUserInfo(EncodeUserInfo(u)); err != nil || again != u {
			t.Fatalf("round trip %+v became %+v %v", u, again, err)
		}
		if us, err := DecodeUserInfos(body); err != nil {
			checkRefusal(t, err)
		} else if again, err := DecodeUserInfos(EncodeUserInfos(us)); err != nil || len(again) != len(us) || (len(us) > 0 && !reflect.DeepEqual(again, us)) {
			t.Fatalf("list round trip %+v became %+v %v", us, again, err)
		}
	})
}

// FuzzDecodeAclInfo covers the bodies of 3006/3007 and the answers of
// 3009/3010.
func FuzzDecodeAclInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		if a, err := DecodeAclInfo(body); err != nil {
			checkRefusal(t, err)
		} else if again, err := DecodeAclInfo(EncodeAclInfo(a)); err != nil || !reflect.DeepEqual(normACL(again), normACL(a)) {
			t.Fatalf("round trip %+v became %+v %v", a, again, err)
		}
		if as, err := DecodeAclInfos(body); err != nil {
			checkRefusal(t, err)
		} else if _, err := DecodeAclInfos(EncodeAclInfos(as)); err != nil {
			t.Fatalf("list %+v does not decode again: %v", as, err)
		}
	})
}

// normACL drops the difference omitempty makes: an empty list and none.
func normACL(a AclInfo) AclInfo {
	if len(a.Policies) == 0 {
		a.Policies = nil
	}
	for i := range a.Policies {
		p := &a.Policies[i]
		if len(p.Entries) == 0 {
			p.Entries = nil
		}
		for j := range p.Entries {
			e := &p.Entries[j]
			if len(e.Actions) == 0 {
				e.Actions = nil
			}
			if len(e.SourceIps) == 0 {
				e.SourceIps = nil
			}
		}
	}
	return a
}

// FuzzDecodeAuthHeaders covers the headers of 3001-3010; which picks the
// request, a, b and c are its fields in order.
func FuzzDecodeAuthHeaders(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string) {
		switch which % 5 {
		case 0:
			h, err := DecodeUserRequest(remoting.NewRequest(CodeAuthGetUser, map[string]string{FieldUsername: a}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if h.Username == "" {
				t.Fatalf("accepted %+v", h)
			}
			if again, err := DecodeUserRequest(EncodeGetUser(h.Username)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 1:
			h, _ := DecodeListUsersRequest(remoting.NewRequest(CodeAuthListUser, map[string]string{FieldFilter: a}, nil))
			if again, _ := DecodeListUsersRequest(EncodeListUsers(h)); again != h {
				t.Fatalf("round trip %+v became %+v", h, again)
			}
		case 2:
			h, err := DecodeAclRequest(remoting.NewRequest(CodeAuthGetACL, map[string]string{FieldSubject: a}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeAclRequest(EncodeGetACL(h.Subject)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 3:
			h, err := DecodeDeleteAclRequest(remoting.NewRequest(CodeAuthDeleteACL,
				map[string]string{FieldSubject: a, FieldPolicyType: b, FieldResource: c}, nil))
			if err != nil {
				checkRefusal(t, err)
				return
			}
			if again, err := DecodeDeleteAclRequest(EncodeDeleteACL(h)); err != nil || again != h {
				t.Fatalf("round trip %+v became %+v %v", h, again, err)
			}
		case 4:
			h, _ := DecodeListAclsRequest(remoting.NewRequest(CodeAuthListACL,
				map[string]string{FieldSubjectFilter: a, FieldResourceFilter: b}, nil))
			if again, _ := DecodeListAclsRequest(EncodeListACLs(h)); again != h {
				t.Fatalf("round trip %+v became %+v", h, again)
			}
		}
	})
}
