package grpcfront

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/message"
)

// fakeDir is a Directory the test edits.
type fakeDir struct {
	mu    sync.RWMutex
	users map[string]auth.User
	acls  map[string]auth.Acl
}

func (d *fakeDir) User(name string) (auth.User, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	u, ok := d.users[name]
	return u, ok
}

func (d *fakeDir) Acl(subject string) (auth.Acl, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, ok := d.acls[subject]
	return a, ok
}

func (d *fakeDir) setUser(u auth.User) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.users[u.Name] = u
}

// Secrets of the test users.
const (
	rootSecret  = "root-secret-1"
	aliceSecret = "alice-secret-1"
)

// authDir has a super user root and a normal user alice with Pub on
// Topic:A and Sub on Group:G (not on Topic:A), from anywhere, and Pub on
// Topic:LAN only from 10.0.0.0/8.
func authDir() *fakeDir {
	topic := func(name string) auth.Resource {
		return auth.Resource{Type: auth.ResourceTopic, Name: name, Pattern: auth.Literal}
	}
	return &fakeDir{
		users: map[string]auth.User{
			"root":  {Name: "root", Secret: rootSecret, Type: auth.Super, Status: auth.Enabled},
			"alice": {Name: "alice", Secret: aliceSecret, Type: auth.Normal, Status: auth.Enabled},
		},
		acls: map[string]auth.Acl{"User:alice": {Subject: "User:alice", Policies: []auth.Policy{{Type: auth.Custom, Entries: []auth.PolicyEntry{
			{Resource: topic("A"), Actions: []auth.Action{auth.ActionPub}, Decision: auth.Allow},
			{Resource: groupResource("G"), Actions: []auth.Action{auth.ActionSub}, Decision: auth.Allow},
			{Resource: topic("LAN"), Actions: []auth.Action{auth.ActionPub}, Decision: auth.Allow,
				SourceIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		}}}}},
	}
}

// newAuthEnv is an env whose front checks against dir.
func newAuthEnv(t *testing.T, dir auth.Directory) *env {
	t.Helper()
	checker := auth.NewChecker(dir, auth.CheckerOptions{})
	e := newEnv(t, func(o *envOptions) { o.front = func(c *Config) { c.Auth = checker } })
	for _, topic := range []string{"A", "B", "LAN"} {
		e.createTopic(topic, 2)
	}
	return e
}

func TestAuthSignatureIsTheClients(t *testing.T) {
	// The test's signer (the Go client's format) and the auth package's
	// agree, so the tests sign as the clients do.
	if got, want := signature("alice", aliceSecret, testDateTime), auth.GRPCAuthorization("alice", aliceSecret, testDateTime); got != want {
		t.Fatalf("test signature %q, auth.GRPCAuthorization %q", got, want)
	}
}

// signature is the "authorization" value of the official clients for
// accessKey/secretKey at dateTime, computed here independently of the
// auth package.
func signature(accessKey, secretKey, dateTime string) string {
	h := hmac.New(sha1.New, []byte(secretKey))
	h.Write([]byte(dateTime))
	return "MQv2-HMAC-SHA1 Credential=" + accessKey + "//Rocketmq, SignedHeaders=x-mq-date-time, Signature=" + hex.EncodeToString(h.Sum(nil))
}

// testDateTime is a date-time as the clients format it.
const testDateTime = "20261101T080000Z"

// signed is a call context of clientID signed as user with secret; an
// empty user is an unsigned call (no authorization metadata at all).
func (e *env) signed(clientID, user, secret string) context.Context {
	ctx := e.ctx(clientID)
	if user == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, headerDateTime, testDateTime, headerAuthorization, signature(user, secret, testDateTime))
}

// sendAs sends one message to topic as the context's user and returns the
// response.
func (e *env) sendAs(ctx context.Context, topic, id string) *v2.SendMessageResponse {
	e.t.Helper()
	resp, err := e.c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{msg(topic, id, "body")}})
	if err != nil {
		e.t.Fatalf("send to %s: gRPC error %v, want an in-band status", topic, err)
	}
	return resp
}

// storedIDs sends a marker message to topic as the super user, waits
// until the topic holds want messages besides it, and returns the ids of
// them all: stores are dispatched in order, so a refused message that
// had been stored would show before the marker.
func (e *env) storedIDs(topic string, want int) []string {
	e.t.Helper()
	marker := "ID-MARKER-" + topic + "-" + strconv.Itoa(want)
	if resp := e.sendAs(e.signed("marker", "root", rootSecret), topic, marker); code(resp.GetStatus()) != v2.Code_OK {
		e.t.Fatalf("marker send to %s: %v", topic, resp.GetStatus())
	}
	var ids []string
	for _, rs := range e.awaitRecords(topic, want+1) {
		for _, r := range rs {
			if id := prop(r, message.PropertyUniqKey); id != marker {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func wantRefused(t *testing.T, what string, st *v2.Status, want v2.Code, contains ...string) {
	t.Helper()
	if st.GetCode() != want {
		t.Fatalf("%s: status %v, want %v", what, st, want)
	}
	for _, s := range contains {
		if !strings.Contains(st.GetMessage(), s) {
			t.Fatalf("%s: message %q does not name %q", what, st.GetMessage(), s)
		}
	}
	for _, secret := range []string{rootSecret, aliceSecret, "wrong-secret"} {
		if strings.Contains(st.GetMessage(), secret) {
			t.Fatalf("%s: message %q carries a secret", what, st.GetMessage())
		}
	}
}

func TestAuthUnsignedCallsAreRefusedUnauthorized(t *testing.T) {
	e := newAuthEnv(t, authDir())
	resp := e.sendAs(e.signed("p1", "", ""), "A", "ID-UNSIGNED")
	wantRefused(t, "unsigned send", resp.GetStatus(), v2.Code_UNAUTHORIZED)
	// What the clients send with empty credentials.
	ctx := metadata.AppendToOutgoingContext(e.ctx("p1"), headerDateTime, testDateTime, headerAuthorization, signature("", "", testDateTime))
	resp = e.sendAs(ctx, "A", "ID-EMPTY-CREDENTIALS")
	wantRefused(t, "send with empty credentials", resp.GetStatus(), v2.Code_UNAUTHORIZED)
	if ids := e.storedIDs("A", 0); len(ids) != 0 {
		t.Fatalf("stored from unauthenticated sends: %v", ids)
	}
}

func TestAuthWrongSecretIsRefusedUnauthorized(t *testing.T) {
	e := newAuthEnv(t, authDir())
	resp := e.sendAs(e.signed("p1", "alice", "wrong-secret"), "A", "ID-WRONG")
	wantRefused(t, "send with a wrong secret", resp.GetStatus(), v2.Code_UNAUTHORIZED, "alice")
	route, err := e.c.QueryRoute(e.signed("p1", "nobody", "x"), &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "A"}})
	if err != nil {
		t.Fatalf("route: %v", err)
	}
	wantRefused(t, "route of an unknown user", route.GetStatus(), v2.Code_UNAUTHORIZED, "nobody")
	if len(route.GetMessageQueues()) != 0 {
		t.Fatalf("refused route lists %d queues", len(route.GetMessageQueues()))
	}
	if ids := e.storedIDs("A", 0); len(ids) != 0 {
		t.Fatalf("stored from a wrongly signed send: %v", ids)
	}
}

func TestAuthDisabledUserIsRefusedUnauthorized(t *testing.T) {
	dir := authDir()
	e := newAuthEnv(t, dir)
	if resp := e.sendAs(e.signed("p1", "alice", aliceSecret), "A", "ID-BEFORE"); code(resp.GetStatus()) != v2.Code_OK {
		t.Fatalf("send before disabling: %v", resp.GetStatus())
	}
	u, _ := dir.User("alice")
	u.Status = auth.Disabled
	dir.setUser(u)
	resp := e.sendAs(e.signed("p1", "alice", aliceSecret), "A", "ID-AFTER")
	wantRefused(t, "send of a disabled user", resp.GetStatus(), v2.Code_UNAUTHORIZED, "alice")
	if ids := e.storedIDs("A", 1); !slices.Equal(ids, []string{"ID-BEFORE"}) {
		t.Fatalf("stored %v, want the one sent before the user was disabled", ids)
	}
}

func TestAuthNormalUserGetsOnlyItsPolicies(t *testing.T) {
	e := newAuthEnv(t, authDir())
	alice := e.signed("p1", "alice", aliceSecret)
	if resp := e.sendAs(alice, "A", "ID-A"); code(resp.GetStatus()) != v2.Code_OK || code(resp.GetEntries()[0].GetStatus()) != v2.Code_OK {
		t.Fatalf("alice's send to A: %v", resp)
	}
	resp := e.sendAs(alice, "B", "ID-B")
	wantRefused(t, "alice's send to B", resp.GetStatus(), v2.Code_FORBIDDEN, "alice", "Topic:B")
	// A batch naming a topic she may not publish to is refused whole.
	batch, err := e.c.SendMessage(alice, &v2.SendMessageRequest{Messages: []*v2.Message{msg("A", "ID-A2", "x"), msg("B", "ID-B2", "x")}})
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	wantRefused(t, "alice's batch to A and B", batch.GetStatus(), v2.Code_FORBIDDEN, "Topic:B")
	if ids := e.storedIDs("B", 0); len(ids) != 0 {
		t.Fatalf("stored in B from refused sends: %v", ids)
	}
	if ids := e.storedIDs("A", 1); !slices.Equal(ids, []string{"ID-A"}) {
		t.Fatalf("stored in A %v, want only her allowed send's", ids)
	}
	// She may route A (Pub), not B.
	route, err := e.c.QueryRoute(alice, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "A"}})
	if err != nil || code(route.GetStatus()) != v2.Code_OK {
		t.Fatalf("alice's route of A: %v %v", route.GetStatus(), err)
	}
	route, err = e.c.QueryRoute(alice, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "B"}})
	if err != nil {
		t.Fatalf("route: %v", err)
	}
	wantRefused(t, "alice's route of B", route.GetStatus(), v2.Code_FORBIDDEN, "Topic:B")
	// Receiving from A needs Sub on it, which she lacks.
	rs := e.receive(alice, receiveReq("G", "A", 8, time.Minute))
	if len(rs) != 1 {
		t.Fatalf("refused receive answered %d responses, want the status alone", len(rs))
	}
	wantRefused(t, "alice's receive from A", rs[0].GetStatus(), v2.Code_FORBIDDEN, "alice", "Topic:A")
	// So do acks and the others of a consumer; a refused ack touches
	// nothing.
	ack, err := e.c.AckMessage(alice, &v2.AckMessageRequest{Group: &v2.Resource{Name: "G"}, Topic: &v2.Resource{Name: "A"},
		Entries: []*v2.AckMessageEntry{{MessageId: "ID-A", ReceiptHandle: "h"}}})
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	wantRefused(t, "alice's ack on A", ack.GetStatus(), v2.Code_FORBIDDEN, "Topic:A")
	cid, err := e.c.ChangeInvisibleDuration(alice, &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "G"}, Topic: &v2.Resource{Name: "A"},
		ReceiptHandle: "handle-1", InvisibleDuration: durpb(time.Minute)})
	if err != nil {
		t.Fatalf("change invisible duration: %v", err)
	}
	wantRefused(t, "alice's change of invisible time on A", cid.GetStatus(), v2.Code_FORBIDDEN, "Topic:A")
	if cid.GetReceiptHandle() != "handle-1" {
		t.Fatalf("refused change answered handle %q, want the request's", cid.GetReceiptHandle())
	}
}

func TestAuthSourceAddressOfAPolicyIsThePeers(t *testing.T) {
	e := newAuthEnv(t, authDir())
	// Pub on Topic:LAN is allowed from 10.0.0.0/8 only; the test
	// connects from 127.0.0.1.
	resp := e.sendAs(e.signed("p1", "alice", aliceSecret), "LAN", "ID-LAN")
	wantRefused(t, "alice's send to LAN from 127.0.0.1", resp.GetStatus(), v2.Code_FORBIDDEN, "Topic:LAN")
}

func TestAuthSuperUserPassesEveryCheck(t *testing.T) {
	e := newAuthEnv(t, authDir())
	root := e.signed("c1", "root", rootSecret)
	for _, topic := range []string{"A", "B", "LAN"} {
		if resp := e.sendAs(root, topic, "ID-ROOT-"+topic); code(resp.GetStatus()) != v2.Code_OK {
			t.Fatalf("root's send to %s: %v", topic, resp.GetStatus())
		}
	}
	e.awaitRecords("B", 1)
	req := receiveReq("ANY-GROUP", "B", 8, time.Minute)
	req.FilterExpression = nil // all
	rs := e.receive(root, req)
	if len(rs) == 0 || code(rs[0].GetStatus()) != v2.Code_OK {
		t.Fatalf("root's receive from B: %v", rs)
	}
	if got := received(t, rs); len(got) != 1 || got[0].GetSystemProperties().GetMessageId() != "ID-ROOT-B" {
		t.Fatalf("root received %v", got)
	}
	route, err := e.c.QueryRoute(root, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "B"}})
	if err != nil || code(route.GetStatus()) != v2.Code_OK {
		t.Fatalf("root's route of B: %v %v", route.GetStatus(), err)
	}
}

func TestAuthOffIgnoresTheAuthorizationHeader(t *testing.T) {
	e := newEnv(t)
	e.createTopic("A", 1)
	// A signature of an unknown user: ignored without Config.Auth.
	resp := e.sendAs(e.signed("p1", "nobody", "nothing"), "A", "ID-OFF")
	if code(resp.GetStatus()) != v2.Code_OK {
		t.Fatalf("send with auth off: %v", resp.GetStatus())
	}
	e.awaitRecords("A", 1)
}

func TestAuthRetriedCallsSignedAgainPass(t *testing.T) {
	e := newAuthEnv(t, authDir())
	// After a failed send the Go client signs the signed context again:
	// the metadata holds two date-times and two signatures; the first of
	// each belong together.
	ctx := metadata.AppendToOutgoingContext(e.signed("p1", "alice", aliceSecret),
		headerDateTime, "20261101T080001Z", headerAuthorization, signature("alice", aliceSecret, "20261101T080001Z"))
	if resp := e.sendAs(ctx, "A", "ID-RETRIED"); code(resp.GetStatus()) != v2.Code_OK {
		t.Fatalf("re-signed send: %v", resp.GetStatus())
	}
}

func TestAuthTelemetry(t *testing.T) {
	e := newAuthEnv(t, authDir())
	t.Run("unsigned stream is answered UNAUTHORIZED and ended", func(t *testing.T) {
		stream, err := e.c.Telemetry(e.ctx("u1"))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		// The refusal comes without waiting for a command.
		cmd, err := stream.Recv()
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		wantRefused(t, "unsigned telemetry", cmd.GetStatus(), v2.Code_UNAUTHORIZED)
		if cmd.GetSettings() != nil {
			t.Fatalf("refusal carries settings %v", cmd.GetSettings())
		}
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the refusal: %v, want the stream's end", err)
		}
		if _, ok := e.s.sessions.get("u1"); ok {
			t.Fatal("an unauthenticated client has a session")
		}
	})
	t.Run("settings are authorized by what they name", func(t *testing.T) {
		stream, err := e.c.Telemetry(e.signed("p1", "alice", aliceSecret))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		reply := e.settings(stream, producerSettings("B"))
		wantRefused(t, "alice's producer settings for B", reply.GetStatus(), v2.Code_FORBIDDEN, "Topic:B")
		if reply.GetSettings() != nil {
			t.Fatalf("refusal carries settings %v", reply.GetSettings())
		}
		if _, ok := e.s.sessions.get("p1"); ok {
			t.Fatal("refused settings were applied")
		}
		// The stream stays: settings she may have are accepted on it.
		if reply := e.settings(stream, producerSettings("A")); code(reply.GetStatus()) != v2.Code_OK || reply.GetSettings().GetPublishing() == nil {
			t.Fatalf("alice's producer settings for A: %v", reply)
		}
		if c, ok := e.s.sessions.get("p1"); !ok || !slices.Equal(c.topics, []string{"A"}) {
			t.Fatalf("session after accepted settings: %v %+v", ok, c)
		}
		// A consumer of group G subscribing A needs Sub on A too.
		reply = e.settings(stream, consumerSettings("G", "A", time.Second))
		wantRefused(t, "alice's consumer settings for G on A", reply.GetStatus(), v2.Code_FORBIDDEN, "Topic:A")
		if c, _ := e.s.sessions.get("p1"); c.group != "" {
			t.Fatalf("refused consumer settings were applied: group %q", c.group)
		}
	})
}

// TestAuthEveryCallIsChecked calls every method of the service unsigned:
// each answers UNAUTHORIZED in-band. A method added to the service fails
// the count until it is added here and to auth.go.
func TestAuthEveryCallIsChecked(t *testing.T) {
	desc := ServiceDesc()
	if n, m := len(desc.Methods), len(desc.Streams); n != 10 || m != 2 {
		t.Fatalf("the service has %d unary and %d streaming methods; this test and auth.go know 10 and 2", n, m)
	}
	e := newAuthEnv(t, authDir())
	ctx := e.signed("c1", "", "")
	g, a := &v2.Resource{Name: "G"}, &v2.Resource{Name: "A"}
	calls := map[string]func() (*v2.Status, error){
		"QueryRoute": func() (*v2.Status, error) {
			r, err := e.c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: a})
			return r.GetStatus(), err
		},
		"Heartbeat": func() (*v2.Status, error) {
			r, err := e.c.Heartbeat(ctx, &v2.HeartbeatRequest{Group: g, ClientType: v2.ClientType_SIMPLE_CONSUMER})
			return r.GetStatus(), err
		},
		"SendMessage": func() (*v2.Status, error) {
			r, err := e.c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{msg("A", "ID-X", "x")}})
			return r.GetStatus(), err
		},
		"QueryAssignment": func() (*v2.Status, error) {
			r, err := e.c.QueryAssignment(ctx, &v2.QueryAssignmentRequest{Topic: a, Group: g})
			return r.GetStatus(), err
		},
		"AckMessage": func() (*v2.Status, error) {
			r, err := e.c.AckMessage(ctx, &v2.AckMessageRequest{Topic: a, Group: g, Entries: []*v2.AckMessageEntry{{ReceiptHandle: "h"}}})
			return r.GetStatus(), err
		},
		"ForwardMessageToDeadLetterQueue": func() (*v2.Status, error) {
			r, err := e.c.ForwardMessageToDeadLetterQueue(ctx, &v2.ForwardMessageToDeadLetterQueueRequest{Topic: a, Group: g, ReceiptHandle: "h"})
			return r.GetStatus(), err
		},
		"EndTransaction": func() (*v2.Status, error) {
			r, err := e.c.EndTransaction(ctx, &v2.EndTransactionRequest{Topic: a, TransactionId: "ID-X", Resolution: v2.TransactionResolution_COMMIT})
			return r.GetStatus(), err
		},
		"NotifyClientTermination": func() (*v2.Status, error) {
			r, err := e.c.NotifyClientTermination(ctx, &v2.NotifyClientTerminationRequest{Group: g})
			return r.GetStatus(), err
		},
		"ChangeInvisibleDuration": func() (*v2.Status, error) {
			r, err := e.c.ChangeInvisibleDuration(ctx, &v2.ChangeInvisibleDurationRequest{Topic: a, Group: g, ReceiptHandle: "h", InvisibleDuration: durpb(time.Minute)})
			return r.GetStatus(), err
		},
		"RecallMessage": func() (*v2.Status, error) {
			r := new(pbcodec.RecallMessageResponse)
			err := e.conn.Invoke(ctx, RecallMessageMethod, &pbcodec.RecallMessageRequest{Topic: a, RecallHandle: "h"}, r, grpc.ForceCodecV2(pbcodec.New()))
			return r.GetStatus(), err
		},
		"ReceiveMessage": func() (*v2.Status, error) {
			rs := e.receive(ctx, receiveReq("G", "A", 1, time.Minute))
			if len(rs) != 1 {
				t.Errorf("refused receive answered %d responses, want 1", len(rs))
			}
			return rs[0].GetStatus(), nil
		},
		"Telemetry": func() (*v2.Status, error) {
			stream, err := e.c.Telemetry(ctx)
			if err != nil {
				return nil, err
			}
			cmd, err := stream.Recv()
			return cmd.GetStatus(), err
		},
	}
	var names []string
	for _, m := range desc.Methods {
		names = append(names, m.MethodName)
	}
	for _, s := range desc.Streams {
		names = append(names, s.StreamName)
	}
	for _, name := range names {
		call, ok := calls[name]
		if !ok {
			t.Errorf("%s: not called by this test", name)
			continue
		}
		st, err := call()
		if err != nil {
			t.Errorf("%s: gRPC error %v, want an in-band status", name, err)
			continue
		}
		if code(st) != v2.Code_UNAUTHORIZED {
			t.Errorf("%s: status %v, want UNAUTHORIZED", name, st)
		}
	}
}

// TestAuthNeeds holds the permissions of each request to RocketMQ's
// (DefaultAuthorizationContextBuilder), with retry topics as groups.
func TestAuthNeeds(t *testing.T) {
	topic := func(name string, acts ...auth.Action) auth.Request {
		return auth.Request{Resource: auth.Resource{Type: auth.ResourceTopic, Name: name, Pattern: auth.Literal}, Actions: acts}
	}
	group := func(name string, acts ...auth.Action) auth.Request {
		return auth.Request{Resource: groupResource(name), Actions: acts}
	}
	res := func(name string) *v2.Resource { return &v2.Resource{Name: name} }
	pub, sub, get := auth.ActionPub, auth.ActionSub, auth.ActionGet
	cases := []struct {
		name string
		req  any
		want []auth.Request
	}{
		{"send", &v2.SendMessageRequest{Messages: []*v2.Message{msg("T", "1", "x"), msg("T", "2", "x"), msg("U", "3", "x")}},
			[]auth.Request{topic("T", pub), topic("U", pub)}},
		{"send to a namespace", &v2.SendMessageRequest{Messages: []*v2.Message{{Topic: &v2.Resource{ResourceNamespace: "ns", Name: "T"}}}},
			[]auth.Request{topic("ns%T", pub)}},
		{"send to a retry topic", &v2.SendMessageRequest{Messages: []*v2.Message{msg("%RETRY%G", "1", "x")}},
			[]auth.Request{group("G", sub)}},
		{"end transaction", &v2.EndTransactionRequest{Topic: res("T")}, []auth.Request{topic("T", pub)}},
		{"recall", &pbcodec.RecallMessageRequest{Topic: res("T"), RecallHandle: "h"}, []auth.Request{topic("T", pub)}},
		{"route", &v2.QueryRouteRequest{Topic: res("T")}, []auth.Request{topic("T", pub, sub, get)}},
		{"route of a retry topic", &v2.QueryRouteRequest{Topic: res("%RETRY%G")}, []auth.Request{group("G", sub, get)}},
		{"assignment", &v2.QueryAssignmentRequest{Group: res("G"), Topic: res("T")}, []auth.Request{group("G", sub), topic("T", sub)}},
		{"ack", &v2.AckMessageRequest{Group: res("G"), Topic: res("T")}, []auth.Request{group("G", sub), topic("T", sub)}},
		{"ack of a retry topic", &v2.AckMessageRequest{Group: res("G"), Topic: res("%RETRY%G")}, []auth.Request{group("G", sub), group("G", sub)}},
		{"dead-letter forward", &v2.ForwardMessageToDeadLetterQueueRequest{Group: res("G"), Topic: res("T")}, []auth.Request{group("G", sub), topic("T", sub)}},
		{"change invisible", &v2.ChangeInvisibleDurationRequest{Group: res("G"), Topic: res("T")}, []auth.Request{group("G", sub), topic("T", sub)}},
		{"consumer heartbeat", &v2.HeartbeatRequest{Group: res("G"), ClientType: v2.ClientType_PUSH_CONSUMER}, []auth.Request{group("G", sub)}},
		{"producer heartbeat", &v2.HeartbeatRequest{ClientType: v2.ClientType_PRODUCER}, nil},
		{"consumer termination", &v2.NotifyClientTerminationRequest{Group: res("%RETRY%G")}, []auth.Request{group("G", sub)}},
		{"producer termination", &v2.NotifyClientTerminationRequest{}, nil},
		{"unnamed resources", &v2.AckMessageRequest{}, nil},
	}
	for _, c := range cases {
		got, refuse := unaryNeeds(c.req)
		if refuse == nil {
			t.Errorf("%s: request type %T unknown", c.name, c.req)
			continue
		}
		if !slices.EqualFunc(got, c.want, equalRequest) {
			t.Errorf("%s: needs %v, want %v", c.name, got, c.want)
		}
	}
	if _, refuse := unaryNeeds(&v2.ReceiveMessageRequest{}); refuse != nil {
		t.Error("a request type the interceptor never sees has a refusal")
	}
	if got, want := receiveNeeds(receiveReq("G", "T", 1, time.Minute)), []auth.Request{group("G", sub), topic("T", sub)}; !slices.EqualFunc(got, want, equalRequest) {
		t.Errorf("receive: needs %v, want %v", got, want)
	}
	settings := []struct {
		name string
		st   *v2.Settings
		want []auth.Request
	}{
		{"producer", producerSettings("T", "U"), []auth.Request{topic("T", pub), topic("U", pub)}},
		{"consumer", consumerSettings("G", "T", 0), []auth.Request{group("G", sub), topic("T", sub)}},
		{"neither", &v2.Settings{}, nil},
	}
	for _, c := range settings {
		if got := settingsNeeds(c.st); !slices.EqualFunc(got, c.want, equalRequest) {
			t.Errorf("%s settings: needs %v, want %v", c.name, got, c.want)
		}
	}
}

func equalRequest(a, b auth.Request) bool {
	return a.Resource == b.Resource && slices.Equal(a.Actions, b.Actions)
}

// BenchmarkAuthCheck is the cost a call pays with Config.Auth: its
// authentication and authorization (a normal user's send).
func BenchmarkAuthCheck(b *testing.B) {
	s := &Server{cfg: Config{Auth: auth.NewChecker(authDir(), auth.CheckerOptions{})}}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(
		headerDateTime, testDateTime, headerAuthorization, signature("alice", aliceSecret, testDateTime)))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}})
	req := &v2.SendMessageRequest{Messages: []*v2.Message{msg("A", "ID-1", "x")}}
	b.ReportAllocs()
	for b.Loop() {
		reqs, _ := unaryNeeds(req)
		if st := s.check(ctx, "SendMessage", reqs); st != nil {
			b.Fatalf("refused: %v", st)
		}
	}
}
