package rmq

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

func readAuthGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "auth", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	aliceEntries = []PolicyEntryInfo{
		{Resource: "Topic:orders", Actions: []string{"Pub", "Sub"}, SourceIps: []string{"192.168.0.0/16"}, Decision: "Allow"},
		{Resource: "Group:g-*", Actions: []string{"Pub", "Sub"}, SourceIps: []string{"192.168.0.0/16"}, Decision: "Allow"},
	}
	bobEntries = []PolicyEntryInfo{{Resource: "Topic:*", Actions: []string{"All"}, Decision: "Deny"}}
)

// TestAuthBodiesDecodeWhatJavaWrites: the bodies RocketMQ 5.3's mqadmin
// sends and its broker answers (testdata/auth, fastjson's field order)
// decode to the expected values, and Petrel's encoding of those values
// decodes back to them.
func TestAuthBodiesDecodeWhatJavaWrites(t *testing.T) {
	users := map[string]UserInfo{
		"create_user_super.json":   {Username: "alice", Password: "secret", UserType: "Super"},
		"create_user_default.json": {Username: "bob", Password: "pw"},
		"update_user_status.json":  {Username: "alice", UserStatus: "disable"},
		"get_user_answer.json":     {Username: "alice", Password: "secret", UserType: "Super", UserStatus: "enable"},
	}
	for name, want := range users {
		got, err := DecodeUserInfo(readAuthGolden(t, name))
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", name, got, err, want)
		}
		if again, err := DecodeUserInfo(EncodeUserInfo(got)); err != nil || again != got {
			t.Errorf("%s: round trip %+v became %+v %v", name, got, again, err)
		}
	}
	list, err := DecodeUserInfos(readAuthGolden(t, "list_user_answer.json"))
	wantList := []UserInfo{users["get_user_answer.json"], {Username: "bob", Password: "pw", UserType: "Normal", UserStatus: "enable"}}
	if err != nil || !reflect.DeepEqual(list, wantList) {
		t.Errorf("list_user_answer.json: %+v %v", list, err)
	}
	if again, err := DecodeUserInfos(EncodeUserInfos(list)); err != nil || !reflect.DeepEqual(again, list) {
		t.Errorf("user list round trip: %+v %v", again, err)
	}

	acls := map[string]AclInfo{
		"create_acl.json":     {Subject: "User:alice", Policies: []PolicyInfo{{Entries: aliceEntries}}},
		"update_acl.json":     {Subject: "User:bob", Policies: []PolicyInfo{{Entries: bobEntries}}},
		"get_acl_answer.json": {Subject: "User:alice", Policies: []PolicyInfo{{PolicyType: "Custom", Entries: aliceEntries}}},
	}
	for name, want := range acls {
		got, err := DecodeAclInfo(readAuthGolden(t, name))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v %v, want %+v", name, got, err, want)
		}
		if again, err := DecodeAclInfo(EncodeAclInfo(got)); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%s: round trip %+v became %+v %v", name, got, again, err)
		}
	}
	al, err := DecodeAclInfos(readAuthGolden(t, "list_acl_answer.json"))
	wantACLs := []AclInfo{
		{Subject: "User:alice", Policies: []PolicyInfo{{PolicyType: "Custom", Entries: aliceEntries[:1]}}},
		{Subject: "User:bob", Policies: []PolicyInfo{{PolicyType: "Custom", Entries: bobEntries}}},
	}
	if err != nil || !reflect.DeepEqual(al, wantACLs) {
		t.Errorf("list_acl_answer.json: %+v %v", al, err)
	}
	if again, err := DecodeAclInfos(EncodeAclInfos(al)); err != nil || !reflect.DeepEqual(again, al) {
		t.Errorf("acl list round trip: %+v %v", again, err)
	}
}

// TestAuthEncodersWriteTheseBytes pins what Petrel writes: Java's
// fastjson reads these (field order does not matter to it), empty fields
// are left out as Java leaves nulls out, and an empty list is [] (Java's
// client reads an absent list body as null).
func TestAuthEncodersWriteTheseBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"user", EncodeUserInfo(UserInfo{Username: "alice", UserType: "Super", UserStatus: "enable"}),
			`{"username":"alice","userType":"Super","userStatus":"enable"}`},
		{"no users", EncodeUserInfos(nil), `[]`},
		{"acl", EncodeAclInfo(AclInfo{Subject: "User:bob", Policies: []PolicyInfo{{PolicyType: "Custom", Entries: bobEntries}}}),
			`{"subject":"User:bob","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:*","actions":["All"],"decision":"Deny"}]}]}`},
		{"no acls", EncodeAclInfos(nil), `[]`},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, c.got, c.want)
		}
	}
	for _, body := range [][]byte{nil, []byte(""), []byte(" null ")} {
		if us, err := DecodeUserInfos(body); err != nil || len(us) != 0 {
			t.Errorf("user list body %q: %v %v, want an empty list", body, us, err)
		}
		if as, err := DecodeAclInfos(body); err != nil || len(as) != 0 {
			t.Errorf("acl list body %q: %v %v, want an empty list", body, as, err)
		}
	}
}

// TestAuthBodiesAreRefusedByName: a missing, null, oversized or malformed
// body is a *BodyError whose text names what is wrong.
func TestAuthBodiesAreRefusedByName(t *testing.T) {
	for _, c := range []struct {
		body []byte
		acl  bool
		want string
	}{
		{nil, false, "no UserInfo JSON body"},
		{[]byte("null"), true, "no AclInfo JSON body"},
		{[]byte(`{"username":"a","password":"` + strings.Repeat("x", MaxUserInfoBytes) + `"}`), false, "more than the limit of 65536"},
		{[]byte(`{"subject":"` + strings.Repeat("x", MaxAclInfoBytes) + `"}`), true, "more than the limit of 1048576"},
		{[]byte(`{"username":7}`), false, "username must be a JSON string, not number"},
		{[]byte(`{"policies":[{"entries":[{"actions":"Pub"}]}]}`), true, "policies.entries.actions must be a JSON array, not string"},
		{[]byte(`{"subject":"User:a"`), true, "not valid JSON"},
		{[]byte(`[{"username":"a"}]`), false, "must be a JSON object, not array"},
		{[]byte(`{"username":"a"} {}`), false, "not valid JSON"},
	} {
		var err error
		if c.acl {
			_, err = DecodeAclInfo(c.body)
		} else {
			_, err = DecodeUserInfo(c.body)
		}
		var be *BodyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("body %.60q: %v, want a *BodyError with %q", c.body, err, c.want)
		}
	}
	if _, err := DecodeUserInfos([]byte(`{"username":"a"}`)); err == nil || !strings.Contains(err.Error(), "array") {
		t.Errorf("a user list that is an object: %v", err)
	}
}

// TestAuthHeadersRoundTrip: every request encodes to what its decoder
// reads, required fields are refused by name when missing, and optional
// ones are left out when empty (Java's decoder then sees null).
func TestAuthHeadersRoundTrip(t *testing.T) {
	u := UserInfo{Username: "alice", Password: "s", UserType: "Normal"}
	for _, c := range []*remoting.Command{EncodeCreateUser(u), EncodeUpdateUser(u)} {
		h, err := DecodeUserRequest(c)
		if err != nil || h.Username != "alice" {
			t.Fatalf("code %d header: %+v %v", c.Code, h, err)
		}
		if got, err := DecodeUserInfo(c.Body); err != nil || got != u {
			t.Fatalf("code %d body: %+v %v", c.Code, got, err)
		}
	}
	for code, c := range map[int16]*remoting.Command{CodeAuthDeleteUser: EncodeDeleteUser("bob"), CodeAuthGetUser: EncodeGetUser("bob")} {
		if h, err := DecodeUserRequest(c); c.Code != code || err != nil || h.Username != "bob" {
			t.Fatalf("code %d: %+v %v", c.Code, h, err)
		}
	}
	if h, _ := DecodeListUsersRequest(EncodeListUsers(ListUsersRequest{Filter: "al"})); h.Filter != "al" {
		t.Fatalf("list users: %+v", h)
	}
	if c := EncodeListUsers(ListUsersRequest{}); c.Ext(FieldFilter) != "" || len(c.ExtFields) != 0 {
		t.Fatalf("list users without a filter sends %v", c.ExtFields)
	}
	a := AclInfo{Subject: "User:alice", Policies: []PolicyInfo{{Entries: aliceEntries}}}
	for _, c := range []*remoting.Command{EncodeCreateACL(a), EncodeUpdateACL(a)} {
		h, err := DecodeAclRequest(c)
		if err != nil || h.Subject != "User:alice" {
			t.Fatalf("code %d header: %+v %v", c.Code, h, err)
		}
		if got, err := DecodeAclInfo(c.Body); err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("code %d body: %+v %v", c.Code, got, err)
		}
	}
	if h, err := DecodeAclRequest(EncodeGetACL("User:bob")); err != nil || h.Subject != "User:bob" {
		t.Fatalf("get acl: %+v %v", h, err)
	}
	del := DeleteAclRequest{Subject: "User:bob", PolicyType: "Default", Resource: "Topic:a"}
	if h, err := DecodeDeleteAclRequest(EncodeDeleteACL(del)); err != nil || h != del {
		t.Fatalf("delete acl: %+v %v", h, err)
	}
	if c := EncodeDeleteACL(DeleteAclRequest{Subject: "User:bob"}); len(c.ExtFields) != 1 {
		t.Fatalf("delete acl without policy type and resource sends %v", c.ExtFields)
	}
	lst := ListAclsRequest{SubjectFilter: "User:a", ResourceFilter: "Topic:"}
	if h, _ := DecodeListAclsRequest(EncodeListACLs(lst)); h != lst {
		t.Fatalf("list acls: %+v", h)
	}
	for _, c := range []struct {
		decode func(*remoting.Command) error
		field  string
	}{
		{func(c *remoting.Command) error { _, err := DecodeUserRequest(c); return err }, FieldUsername},
		{func(c *remoting.Command) error { _, err := DecodeAclRequest(c); return err }, FieldSubject},
		{func(c *remoting.Command) error { _, err := DecodeDeleteAclRequest(c); return err }, FieldSubject},
	} {
		err := c.decode(remoting.NewRequest(CodeAuthGetUser, nil, nil))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !fe.Missing {
			t.Errorf("no %s: %v", c.field, err)
		}
	}
}
