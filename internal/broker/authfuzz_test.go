package broker

import (
	"reflect"
	"testing"
)

// FuzzAuthPayloads feeds the applier's decoders of the user and ACL
// records (a slave decodes what its master's log holds): no panic, what
// is accepted passes the management checks, and the conversion to the
// directory's types and back is stable after one normalisation.
func FuzzAuthPayloads(f *testing.F) {
	f.Add([]byte(`{"username":"u","password":"p","userType":"Normal","userStatus":"enable"}`))
	f.Add([]byte(`{"subject":"User:u","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:t*","actions":["Pub"],"sourceIps":["10.0.0.1","10.1.0.0/16"],"decision":"Allow"}]}]}`))
	f.Add([]byte(`{"subject":"User:u","policies":[{"policyType":"Default","entries":[{"resource":"Cluster:","actions":["All"],"decision":"Deny"}]}]}`))
	f.Add([]byte(`{"subject":"u","policies":[]}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		if u, err := decodeUserPayload(p); err == nil {
			if checkUser(userFromMeta(u)) != nil {
				t.Fatalf("accepted user %+v fails the checks", u)
			}
			if back, err := decodeUserPayload(userPayload(u)); err != nil || back != u {
				t.Fatalf("user %+v re-decodes as %+v %v", u, back, err)
			}
		}
		a, err := decodeAclPayload(p)
		if err != nil {
			return
		}
		acl, err := aclFromMeta(a)
		if err != nil {
			t.Fatalf("accepted ACL %+v does not convert: %v", a, err)
		}
		if checkPolicies(acl.Policies) != nil {
			t.Fatalf("accepted ACL %+v fails the checks", acl)
		}
		n1 := aclToMeta(acl)
		again, err := aclFromMeta(n1)
		if err != nil {
			t.Fatalf("normalised ACL %+v does not convert: %v", n1, err)
		}
		if n2 := aclToMeta(again); !reflect.DeepEqual(n1, n2) {
			t.Fatalf("normalising twice differs:\n%+v\n%+v", n1, n2)
		}
	})
}
