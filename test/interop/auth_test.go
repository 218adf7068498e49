package interop

// Authentication and authorization (issue 18) with the official clients
// against `petrel server --auth --auth-init-user admin:SECRET`: the 4.x
// producer and push consumer and the 5.x producer and simple consumer
// work with the right credentials and are refused with a wrong secret; a
// normal user allowed only Pub on topic A cannot send to B, subscribe to
// A or delete A, and a super user can; operator commands without
// credentials are refused.
//
// The 4.x push consumer reports refusals only in its log (its heartbeat
// and pulls fail in the background), so the suite's rlog logger
// (refusalLog) keeps the client's warnings that carry code 16, by broker
// address; each test has its own broker, so its refusals are its own.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// The init user every auth test starts its server with.
const (
	adminUser   = "admin"
	adminSecret = "admin-secret-0123"
)

// authTimeout bounds each wait of the auth and TLS tests.
const authTimeout = 15 * time.Second

// secured is a server started with --auth and/or TLS, with what the CLI
// needs to reach it.
type secured struct {
	*petrel
	// cliTLS are the CLI flags that dial it (--tls --tls-ca F) when its
	// remoting ports need TLS.
	cliTLS []string
}

// startAuthPetrel starts a server with --auth and the init user, and more
// flags.
func startAuthPetrel(t *testing.T, extra ...string) *secured {
	t.Helper()
	args := append([]string{"--auth", "--auth-init-user", adminUser + ":" + adminSecret}, extra...)
	return &secured{petrel: startPetrel(t, serverOptions{extraArgs: args})}
}

// creds returns the CLI flags of a user's credentials.
func creds(user, secret string) []string {
	return []string{"--access-key", user, "--secret-key", secret}
}

// cli runs an operator command against s with env added to the
// environment, and returns its output and error.
func (s *secured) cli(env []string, args ...string) (stdout, stderr string, err error) {
	all := append(append(append([]string{}, args...), "--namesrv", s.nsAddr), s.cliTLS...)
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout) // a hung CLI fails the test
	defer cancel()
	cmd := exec.CommandContext(ctx, petrelBin, all...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// mustCLI runs an operator command that must succeed.
func (s *secured) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := s.cli(nil, args...)
	if err != nil {
		t.Fatalf("petrel %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// refusedCLI runs an operator command that must fail with a refusal, and
// returns its stderr.
func (s *secured) refusedCLI(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, err := s.cli(env, args...)
	if err == nil {
		t.Fatalf("petrel %s succeeded, want it refused\nstdout:\n%s", strings.Join(args, " "), out)
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("petrel %s: %v, want a refusal (non-zero exit)", strings.Join(args, " "), err)
	}
	return errOut
}

// createTopicsAs creates topics with the CLI as the admin.
func (s *secured) createTopicsAs(t *testing.T, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		s.mustCLI(t, append([]string{"topic", "create", topic, "--queues", "4"}, creds(adminUser, adminSecret)...)...)
	}
}

// cred4 is the 4.x client's credentials.
func cred4(user, secret string) primitive.Credentials {
	return primitive.Credentials{AccessKey: user, SecretKey: secret}
}

// mentionsNoPermission: a 4.x error carries code 16 (NO_PERMISSION), as the
// client renders a broker's refusal ("CODE: 16  DESC: ...").
func mentionsNoPermission(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "CODE: 16") || strings.Contains(err.Error(), "Code: 16"))
}

// send4 sends one message with SendSync.
func send4(prod rocketmq.Producer, topic, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	res, err := prod.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	if err != nil {
		return err
	}
	if res.Status != primitive.SendOK {
		return fmt.Errorf("status %v", res.Status)
	}
	return nil
}

// rpcCode5 is the status code of a 5.x client error: the client returns
// *ErrRpcStatus, or (from Start) a text that holds its rendering.
func rpcCode5(err error) string {
	if err == nil {
		return ""
	}
	if st, ok := rmq.AsErrRpcStatus(err); ok {
		return fmt.Sprint(st.GetCode())
	}
	for code, name := range map[string]string{"40100": "UNAUTHORIZED", "40300": "FORBIDDEN"} {
		if strings.Contains(err.Error(), "CODE: "+name) {
			return code
		}
	}
	return "?"
}

// config5 is the 5.x client configuration with credentials.
func config5(p *petrel, group, user, secret string) *rmq.Config {
	c := rmq5Config(p, group)
	c.Credentials = &credentials.SessionCredentials{AccessKey: user, AccessSecret: secret}
	return c
}

// startProducer5 starts a 5.x producer of topics (which must exist);
// stopped when the test ends if it started.
func startProducer5(t *testing.T, cfg *rmq.Config, topics ...string) (rmq.Producer, error) {
	t.Helper()
	prod, err := rmq.NewProducer(cfg, rmq.WithTopics(topics...))
	if err != nil {
		t.Fatalf("new 5.x producer: %v", err)
	}
	initIsolated(t, prod)
	if err := prod.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = prod.GracefulStop() })
	return prod, nil
}

// startSimple5 starts a 5.x simple consumer; stopped when the test ends
// if it started.
func startSimple5(t *testing.T, cfg *rmq.Config, topic string) (rmq.SimpleConsumer, error) {
	t.Helper()
	sc, err := rmq.NewSimpleConsumer(cfg, rmq.WithAwaitDuration(receiveAwait),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatalf("new 5.x simple consumer: %v", err)
	}
	if err := sc.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = sc.GracefulStop() })
	return sc, nil
}

// send5err sends one message and returns the error.
func send5err(prod rmq.Producer, topic, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	_, err := prod.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
	return err
}

// receive5err receives once and returns the error.
func receive5err(sc rmq.SimpleConsumer) error {
	ctx, cancel := context.WithTimeout(context.Background(), receiveAwait+authTimeout)
	defer cancel()
	_, err := sc.Receive(ctx, 16, 10*time.Second)
	return err
}

// refused5 checks that a 5.x client was refused with code: at Start
// (startErr) or, when it started, at its first call (call).
func refused5(t *testing.T, what, code string, startErr error, call func() error) {
	t.Helper()
	err := startErr
	if err == nil {
		err = call()
	}
	if got := rpcCode5(err); got != code {
		t.Fatalf("%s: %v (status %s), want status %s", what, err, got, code)
	}
}

// consume4 starts a 4.x push consumer of a new group on topic with
// options, recording into a new collector.
func consume4(t *testing.T, p *petrel, topic string, opts ...consumer.Option) *collector {
	t.Helper()
	col := newCollector()
	c := newPushConsumer(t, p, uniqueName(t, "cg"), opts...)
	startPushConsumer(t, c, topic, consumer.MessageSelector{}, col, "v4")
	return col
}

// refusalLog keeps the 4.x client's log entries that report a code 16
// from a broker: the push consumer's failed heartbeats and pulls.
var refusalLog = &capturingLogger{}

// The logger is set before any client runs (SetLogger is not safe
// against concurrent logging); TestMain's SetLogLevel reaches it after.
func init() { rlog.SetLogger(refusalLog) }

type capturingLogger struct {
	mu       sync.Mutex
	refusals map[string][]string // broker address -> entries
	changed  chan struct{}
}

// maxRefusalsPerBroker bounds what is kept of a broker's refusals.
const maxRefusalsPerBroker = 100

func (l *capturingLogger) Debug(string, map[string]interface{}) {}
func (l *capturingLogger) Info(string, map[string]interface{})  {}
func (l *capturingLogger) Warning(msg string, fields map[string]interface{}) {
	l.keep(msg, fields)
}

func (l *capturingLogger) Error(msg string, fields map[string]interface{}) {
	l.keep(msg, fields)
	fmt.Fprintln(os.Stderr, "rocketmq-client:", msg, fields)
}

func (l *capturingLogger) Fatal(msg string, fields map[string]interface{}) {
	fmt.Fprintln(os.Stderr, "rocketmq-client:", msg, fields)
}
func (l *capturingLogger) Level(string)            {}
func (l *capturingLogger) OutputPath(string) error { return nil }

func (l *capturingLogger) keep(msg string, fields map[string]interface{}) {
	text := fmt.Sprint(msg, " ", fields)
	code16 := fmt.Sprint(fields["responseCode"]) == "16" || strings.Contains(text, "Code: 16") || strings.Contains(text, "CODE: 16")
	if !code16 {
		return
	}
	addr := fmt.Sprint(fields["brokerAddr"])
	if b, ok := fields[rlog.LogKeyBroker]; ok {
		addr = fmt.Sprint(b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refusals == nil {
		l.refusals = map[string][]string{}
	}
	if len(l.refusals[addr]) < maxRefusalsPerBroker {
		l.refusals[addr] = append(l.refusals[addr], text)
	}
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
}

// waitRefusal waits until a 4.x client logged a code 16 from brAddr and
// returns the entry.
func (l *capturingLogger) waitRefusal(t *testing.T, brAddr, what string) string {
	t.Helper()
	deadline := time.NewTimer(authTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		got := l.refusals[brAddr]
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		if len(got) > 0 {
			return got[0]
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: the client logged no refusal (code 16) from the broker %s within %v", what, brAddr, authTimeout)
		}
	}
}

// TestAuth4xWithCredentials: a 4.x producer and push consumer signing as
// the super user work; with a wrong secret, or unsigned, the producer's
// sends are refused with code 16 and the push consumer's requests too.
func TestAuth4xWithCredentials(t *testing.T) {
	t.Parallel()
	s := startAuthPetrel(t)
	topic := uniqueName(t, "t")
	s.createTopicsAs(t, topic)
	waitRoute(t, s.nsAddr, topic)

	admin := cred4(adminUser, adminSecret)
	prod := newProducer(t, s.petrel, producer.WithCredentials(admin))
	want := bodies(t, "m", 5)
	for _, b := range want {
		if err := send4(prod, topic, b); err != nil {
			t.Fatalf("send as %s: %v", adminUser, err)
		}
	}
	col := consume4(t, s.petrel, topic, consumer.WithCredentials(admin))
	col.waitAll(t, authTimeout, "push consumer as "+adminUser, want)

	wrong := newProducer(t, s.petrel, producer.WithCredentials(cred4(adminUser, "not-the-secret")))
	err := send4(wrong, topic, "wrong")
	if !mentionsNoPermission(err) {
		t.Fatalf("send with a wrong secret: %v, want a refusal with code 16", err)
	}
	if strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("the refusal shows the secret: %v", err)
	}
	t.Logf("send with a wrong secret: %v", err)
	unsigned := newProducer(t, s.petrel)
	if err := send4(unsigned, topic, "unsigned"); !mentionsNoPermission(err) {
		t.Fatalf("unsigned send: %v, want a refusal with code 16", err)
	}

	// A push consumer with a wrong secret: its heartbeat and pulls are
	// refused (the client logs them), and it receives nothing of what
	// the first consumer got.
	bad := newCollector()
	c := newPushConsumer(t, s.petrel, uniqueName(t, "cg"), consumer.WithCredentials(cred4(adminUser, "not-the-secret")))
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			bad.add("bad", m)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		startConsumerCleanup(t, c)
		entry := refusalLog.waitRefusal(t, s.brAddr, "push consumer with a wrong secret")
		t.Logf("push consumer with a wrong secret: %s", entry)
		if n := len(bad.snapshot()); n != 0 {
			t.Fatalf("the push consumer with a wrong secret consumed %d messages", n)
		}
	} else if !mentionsNoPermission(err) {
		t.Fatalf("push consumer with a wrong secret: Start: %v, want a refusal with code 16", err)
	}
}

// startConsumerCleanup shuts a started push consumer down when the test
// ends, as startConsumer does.
func startConsumerCleanup(t *testing.T, c rocketmq.PushConsumer) {
	t.Cleanup(func() {
		c.Suspend()
		if p, ok := consumerServers.LoadAndDelete(c); ok {
			p.(*petrel).afterStop(func() { _ = c.Shutdown() })
			return
		}
		_ = c.Shutdown()
	})
}

// TestAuth5xWithCredentials: a 5.x producer and simple consumer with the
// super user's credentials work; with a wrong secret both are refused
// with UNAUTHORIZED (40100).
func TestAuth5xWithCredentials(t *testing.T) {
	t.Parallel()
	s := startAuthPetrel(t)
	topic, group := uniqueName(t, "t"), uniqueName(t, "g")
	s.createTopicsAs(t, topic)

	prod, err := startProducer5(t, config5(s.petrel, "", adminUser, adminSecret), topic)
	if err != nil {
		t.Fatalf("start the 5.x producer as %s: %v", adminUser, err)
	}
	want := bodies(t, "m", 4)
	for _, b := range want {
		if err := send5err(prod, topic, b); err != nil {
			t.Fatalf("5.x send as %s: %v", adminUser, err)
		}
	}
	sc, err := startSimple5(t, config5(s.petrel, group, adminUser, adminSecret), topic)
	if err != nil {
		t.Fatalf("start the 5.x simple consumer as %s: %v", adminUser, err)
	}
	got := map[string]bool{}
	receiveUntil(t, sc, 16, 20*time.Second, "the 5.x simple consumer to receive every message", func(mv *rmq.MessageView) {
		got[string(mv.GetBody())] = true
		ack5(t, sc, mv)
	}, func() bool { return len(got) == len(want) })

	_, err = startProducer5(t, config5(s.petrel, "", adminUser, "not-the-secret"), topic)
	refused5(t, "5.x producer with a wrong secret", "40100", err, func() error { return send5err(prod, topic, "x") })
	if err != nil && strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("the refusal shows the secret: %v", err)
	}
	wrongSC, err := startSimple5(t, config5(s.petrel, group, adminUser, "not-the-secret"), topic)
	refused5(t, "5.x simple consumer with a wrong secret", "40100", err, func() error { return receive5err(wrongSC) })
}

// TestAuthNormalUserOnlyPubOnA: alice, a normal user allowed only Pub on
// topic A, sends to A; she cannot send to B, subscribe to A (4.x push or
// 5.x simple consumer) or delete A; nor can anyone without credentials;
// the super user sends to B, consumes A and deletes A.
func TestAuthNormalUserOnlyPubOnA(t *testing.T) {
	t.Parallel()
	s := startAuthPetrel(t)
	a, b := uniqueName(t, "A"), uniqueName(t, "B")
	s.createTopicsAs(t, a, b)
	const alice, aliceSecret = "alice", "alice-secret-42"
	s.mustCLI(t, append([]string{"user", "create", alice, "--secret", aliceSecret, "--type", "normal"}, creds(adminUser, adminSecret)...)...)
	s.mustCLI(t, append([]string{"acl", "create", "--subject", "User:" + alice, "--resource", "Topic:" + a, "--action", "Pub", "--decision", "allow"}, creds(adminUser, adminSecret)...)...)
	waitRoute(t, s.nsAddr, a)
	waitRoute(t, s.nsAddr, b)

	// Pub on A, not on B: the 4.x client.
	var err error
	prod := newProducer(t, s.petrel, producer.WithCredentials(cred4(alice, aliceSecret)))
	want := bodies(t, "m", 3)
	for _, body := range want {
		if err := send4(prod, a, body); err != nil {
			t.Fatalf("alice sends to A: %v", err)
		}
	}
	err = send4(prod, b, "to B")
	if !mentionsNoPermission(err) || !strings.Contains(err.Error(), alice) {
		t.Fatalf("alice sends to B: %v, want a refusal with code 16 naming her", err)
	}

	// No Sub on A.
	c := newPushConsumer(t, s.petrel, uniqueName(t, "cg"), consumer.WithCredentials(cred4(alice, aliceSecret)))
	stolen := newCollector()
	if err := c.Subscribe(a, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			stolen.add("alice", m)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		startConsumerCleanup(t, c)
		t.Logf("alice's push consumer: %s", refusalLog.waitRefusal(t, s.brAddr, "alice's push consumer of A"))
	} else if !mentionsNoPermission(err) {
		t.Fatalf("alice's push consumer of A: Start: %v, want a refusal with code 16", err)
	}

	// The 5.x client: alice sends to A, not to B, and cannot receive
	// from A.
	prod5, err := startProducer5(t, config5(s.petrel, "", alice, aliceSecret), a)
	if err != nil {
		t.Fatalf("alice's 5.x producer of A: %v", err)
	}
	if err := send5err(prod5, a, "5x to A"); err != nil {
		t.Fatalf("alice sends to A with the 5.x client: %v", err)
	}
	refused5(t, "alice sends to B with the 5.x client", "40300", nil, func() error { return send5err(prod5, b, "5x to B") })
	sc, err := startSimple5(t, config5(s.petrel, uniqueName(t, "g"), alice, aliceSecret), a)
	refused5(t, "alice's 5.x simple consumer of A", "40300", err, func() error { return receive5err(sc) })

	// No Delete on A, and nothing without credentials.
	stderr := s.refusedCLI(t, nil, append([]string{"topic", "delete", a}, creds(alice, aliceSecret)...)...)
	if !strings.Contains(stderr, `"alice"`) || !strings.Contains(stderr, "Delete") {
		t.Fatalf("alice: petrel topic delete: %s, want a refusal naming her and the action", stderr)
	}
	stderr = s.refusedCLI(t, nil, "topic", "delete", a)
	if !strings.Contains(stderr, "--access-key") {
		t.Fatalf("no credentials: petrel topic delete: %s, want a refusal saying to pass credentials", stderr)
	}
	if r, found, err := queryRoute(s.nsAddr, a); err != nil || !found || r.readQueues() == 0 {
		t.Fatalf("topic A after the refused deletes: found %v, %v", found, err)
	}

	// The super user: sends to B, consumes A (alice got none of it),
	// deletes A (credentials from the environment this time).
	admin := newProducer(t, s.petrel, producer.WithCredentials(cred4(adminUser, adminSecret)))
	if err := send4(admin, b, "admin to B"); err != nil {
		t.Fatalf("admin sends to B: %v", err)
	}
	col := consume4(t, s.petrel, a, consumer.WithCredentials(cred4(adminUser, adminSecret)))
	col.waitAll(t, authTimeout, "admin consumes A", want)
	if n := len(stolen.snapshot()); n != 0 {
		t.Fatalf("alice's push consumer consumed %d messages of A", n)
	}
	env := []string{"PETREL_ACCESS_KEY=" + adminUser, "PETREL_SECRET_KEY=" + adminSecret}
	if out, errOut, err := s.cli(env, "topic", "delete", a); err != nil {
		t.Fatalf("admin: petrel topic delete %s: %v\nstdout:\n%s\nstderr:\n%s", a, err, out, errOut)
	}
	waitFor(t, authTimeout, "topic A's route to be gone after admin's delete", func() (bool, string) {
		_, found, err := queryRoute(s.nsAddr, a)
		if err != nil {
			return false, err.Error()
		}
		return !found, "the name server still routes A"
	})
}
